package session

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sondedbg/sonde/target"
)

// FunctionAddresses returns every address where a breakpoint on the named
// function belongs in c's process: the entry of each out-of-line copy
// (clones included) and the start of each inlined copy, in every module.
func (s *Session) FunctionAddresses(c *target.Context, name string) ([]uint64, error) {
	mods, err := s.Modules(c)
	if err != nil {
		return nil, err
	}
	var out []uint64
	var errs []error
	for _, m := range mods {
		b, _ := s.Binary(m)
		if b == nil {
			continue
		}
		insts, err := b.LookupFunction(name)
		if err != nil {
			errs = append(errs, err)
		}
		for _, in := range insts {
			out = append(out, in.Entry+m.Bias)
		}
	}
	return finish(out, errs, "function "+name)
}

// LineAddresses returns every address where a breakpoint on file:line belongs
// in c's process: one per function instance (inlined and cloned copies too)
// with code for that line, in every module. Column is accepted for the
// protocol's sake; lines are the unit of placement.
func (s *Session) LineAddresses(c *target.Context, file string, line, column int) ([]uint64, error) {
	mods, err := s.Modules(c)
	if err != nil {
		return nil, err
	}
	var out []uint64
	var errs []error
	for _, m := range mods {
		b, _ := s.Binary(m)
		if b == nil {
			continue
		}
		locs, err := b.LookupLine(file, line)
		if err != nil {
			errs = append(errs, err)
		}
		for _, l := range locs {
			out = append(out, l.Addr+m.Bias)
		}
	}
	return finish(out, errs, fmt.Sprintf("%s:%d", file, line))
}

func finish(addrs []uint64, errs []error, what string) ([]uint64, error) {
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	out := addrs[:0]
	for i, a := range addrs {
		if i == 0 || a != addrs[i-1] {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return nil, fmt.Errorf("%s: no code found", what)
	}
	return out, nil
}

// VariableAddresses returns the static addresses of the named global or
// static variable in c's process, in every module.
func (s *Session) VariableAddresses(c *target.Context, name string) ([]uint64, error) {
	mods, err := s.Modules(c)
	if err != nil {
		return nil, err
	}
	var out []uint64
	var errs []error
	for _, m := range mods {
		b, _ := s.Binary(m)
		if b == nil {
			continue
		}
		vars, err := b.LookupVariable(name)
		if err != nil {
			errs = append(errs, err)
		}
		for _, v := range vars {
			out = append(out, v.Addr+m.Bias)
		}
	}
	return finish(out, errs, "variable "+name)
}
