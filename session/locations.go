package session

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
)

// FunctionAddresses returns every address where a breakpoint on the named
// function belongs in c's process: the entry of each out-of-line copy
// (clones included) and the start of each inlined copy, in every module.
func (s *Session) FunctionAddresses(c *target.Context, name string) ([]uint64, error) {
	return s.addressesInModules(c, "function "+name, func(b *symbols.Binary) ([]uint64, error) {
		insts, err := b.LookupFunction(name)
		out := make([]uint64, 0, len(insts))
		for _, in := range insts {
			out = append(out, in.Entry)
		}
		return out, err
	})
}

// LineAddresses returns every address where a breakpoint on file:line belongs
// in c's process: one per function instance (inlined and cloned copies too)
// with code for that line, in every module. Column is accepted for the
// protocol's sake; lines are the unit of placement.
func (s *Session) LineAddresses(c *target.Context, file string, line, column int) ([]uint64, error) {
	return s.addressesInModules(c, fmt.Sprintf("%s:%d", file, line), func(b *symbols.Binary) ([]uint64, error) {
		locs, err := b.LookupLine(file, line)
		out := make([]uint64, 0, len(locs))
		for _, l := range locs {
			out = append(out, l.Addr)
		}
		return out, err
	})
}

// VariableAddresses returns the static addresses of the named global or
// static variable in c's process, in every module.
func (s *Session) VariableAddresses(c *target.Context, name string) ([]uint64, error) {
	return s.addressesInModules(c, "variable "+name, func(b *symbols.Binary) ([]uint64, error) {
		vars, err := b.LookupVariable(name)
		out := make([]uint64, 0, len(vars))
		for _, v := range vars {
			out = append(out, v.Addr)
		}
		return out, err
	})
}

// addressesInModules asks every module's symbol file for link-time addresses
// and returns them run-time, sorted and without duplicates. Errors of single
// modules matter only when nothing was found anywhere.
func (s *Session) addressesInModules(c *target.Context, what string, lookup func(*symbols.Binary) ([]uint64, error)) ([]uint64, error) {
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
		addrs, err := lookup(b)
		if err != nil {
			errs = append(errs, err)
		}
		out = appendRunTime(out, m, addrs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	uniq := out[:0]
	for i, a := range out {
		if i == 0 || a != out[i-1] {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return nil, fmt.Errorf("%s: no code found", what)
	}
	return uniq, nil
}

func appendRunTime(dst []uint64, m *modules.Module, addrs []uint64) []uint64 {
	for _, a := range addrs {
		dst = append(dst, a+m.Bias)
	}
	return dst
}
