package services

// Breakpoint locations: a breakpoint's properties (Location, File and
// Line, AccessMode, SkipPrologue) turned into the addresses to plant at and
// the kind of breakpoint, as the C agent reads them.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/variables"
)

// resolve turns a breakpoint's location properties into addresses and a kind.
func (bs *breakpoints) resolve(p map[string]any, proc *target.Context, loc Locator) ([]uint64, target.BreakpointSpec, error) {
	var spec target.BreakpointSpec
	if t, _ := p["BreakpointType"].(string); t == "Hardware" {
		spec.Kind = target.BreakpointHardware
	}
	if mode, ok := propInt(p, "AccessMode"); ok && mode != 0 && mode&4 == 0 {
		// Read (1) and/or write (2) access without execute: a watchpoint.
		spec.Kind = target.Watchpoint
		spec.Access = target.AccessWrite
		if mode&1 != 0 {
			spec.Access = target.AccessReadWrite
		}
		spec.Size = 1
		if n, ok := propInt(p, "Size"); ok {
			spec.Size = int(n)
		}
	}
	text, _ := p["Location"].(string)
	text = strings.TrimSpace(text)
	if file, ok := p["File"].(string); ok && file != "" {
		line, _ := propInt(p, "Line")
		col, _ := propInt(p, "Column")
		if loc == nil {
			return nil, spec, fmt.Errorf("no line information service")
		}
		addrs, err := loc.LineAddresses(proc, bs.paths.mapPath(file), int(line), int(col))
		if err != nil || !namesFunction(loc, proc, text) {
			return addrs, spec, err
		}
		// File and Line with a Location naming a function: the C agent
		// evaluates the Location in the scope of the line's code and
		// plants there, not at the line. Eclipse's Step Into Selection
		// sends this: the line of the call and the function called on
		// it, with SkipPrologue. (Eclipse's line breakpoints may carry a
		// Location of "file:line" text, which names no function: the line.)
	}
	if text == "" {
		return nil, spec, fmt.Errorf("breakpoint has neither Location nor File")
	}
	if v, err := strconv.ParseUint(text, 0, 64); err == nil {
		return []uint64{v}, spec, nil
	}
	if spec.Kind == target.Watchpoint {
		// The data a watchpoint watches: an expression of static data
		// ("counter", "&counter", "table[3].n"), its size the Size
		// property or else the data's.
		addr, size, err := bs.staticData(proc, text)
		if err != nil {
			return nil, spec, err
		}
		if _, set := p["Size"]; !set && size > 0 {
			spec.Size = int(min(size, 8))
		}
		return []uint64{addr}, spec, nil
	}
	if loc == nil {
		return nil, spec, fmt.Errorf("no symbol service to resolve %q", text)
	}
	addrs, err := loc.FunctionAddresses(proc, strings.TrimPrefix(text, "&"))
	// Without SkipPrologue a function's name is an address expression, as
	// the TCF spec defines Location ("evaluates to an address") and the C
	// agent plants it: at the entry, a stop there shown at frame level 0
	// (the innermost inlined call that begins at the entry) — gdb's break
	// *FUNCTION. So the function flag goes only with SkipPrologue.
	if skip, _ := p["SkipPrologue"].(bool); skip {
		// gdb's break FUNCTION: its stops show the frames gdb shows for
		// one (session.HiddenInline).
		spec.Function = true
		if pl, ok := loc.(prologueSkipper); ok {
			for i, a := range addrs {
				addrs[i] = pl.AfterPrologue(proc, a)
			}
		}
	}
	return addrs, spec, err
}

// namesFunction reports whether text, a breakpoint's Location, is the name
// of a function of proc (not an address, not "file:line" text).
func namesFunction(loc Locator, proc *target.Context, text string) bool {
	if text == "" || strings.ContainsAny(text, ":") && !strings.Contains(text, "::") {
		return false
	}
	if _, err := strconv.ParseUint(text, 0, 64); err == nil {
		return false
	}
	addrs, err := loc.FunctionAddresses(proc, strings.TrimPrefix(text, "&"))
	return err == nil && len(addrs) > 0
}

// staticData evaluates an expression of a process's static data (no
// registers, no memory read: a variable, a member, an element, or the
// address of one) to the address and size of the data it names.
func (bs *breakpoints) staticData(proc *target.Context, text string) (addr uint64, size int64, err error) {
	mods, err := bs.session.Modules(proc)
	if err != nil {
		return 0, 0, err
	}
	env := &expr.Env{Frame: staticFrame{proc}, Arch: bs.target.Arch(),
		Global: func(name string) (*variables.Variable, *variables.Reader, uint64, error) {
			return bs.session.FindGlobal(mods, name)
		}}
	res, err := expr.Eval(text, env)
	if err != nil {
		return 0, 0, fmt.Errorf("watchpoint location %q: %w", text, err)
	}
	t := res.Type.Strip()
	switch {
	case res.HasAddress:
		return res.Address, res.Type.ByteSize(), nil
	case t != nil && t.Kind == variables.KindPointer && res.Value != nil:
		// The address of the data ("&counter").
		n, err := res.Int()
		if err != nil {
			return 0, 0, err
		}
		size := int64(1)
		if t.Elem != nil {
			size = t.Elem.ByteSize()
		}
		return uint64(n), size, nil
	}
	return 0, 0, fmt.Errorf("watchpoint location %q names no data in memory", text)
}

// staticFrame is the frame a watchpoint's location is evaluated in: the
// process's memory, no registers (its threads may be running).
type staticFrame struct{ proc *target.Context }

func (f staticFrame) ReadMemory(buf []byte, addr uint64) (int, error) {
	return f.proc.ReadMemory(addr, buf)
}
func (staticFrame) Register(int) ([]byte, error) {
	return nil, fmt.Errorf("no registers in a watchpoint's location")
}
func (staticFrame) PC() uint64   { return 0 }
func (staticFrame) Exact() bool  { return true }
func (staticFrame) Bias() uint64 { return 0 }
func (staticFrame) CFA() (uint64, error) {
	return 0, fmt.Errorf("no frame in a watchpoint's location")
}
func (staticFrame) Caller() (variables.Frame, *variables.Reader) { return nil, nil }

func propInt(p map[string]any, k string) (int64, bool) {
	switch v := p[k].(type) {
	case float64:
		return int64(v), true
	case interface{ Int64() (int64, error) }:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}
