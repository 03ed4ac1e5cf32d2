package session

import (
	"errors"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/unwind"
)

// Tail-call frames, rebuilt from call-site DWARF the way gdb does
// (gdb/dwarf2/frame-tailcall.c and call_site_find_chain in dwarf2/loc.c).
//
// A function that ends in a jump to another leaves no frame: its caller's
// return address leads straight to the function it jumped to. Where a frame
// unwound by CFI has a caller whose return address is a call site
// (DW_TAG_call_site) whose target is not the frame's function, the functions
// in between are searched: from the call site's target, through the tail
// calls (DW_AT_call_tail_call) of each function, to the frame's function.
// Every path found is a candidate; the frames common to all candidates at
// the caller's end and at the callee's end are kept, the ambiguous middle
// is dropped, and nothing is made when nothing is common. Any call site on
// the way that cannot be resolved statically (an indirect call, a function
// without DWARF) abandons the whole chain, as in gdb.

// maxTailSearch bounds the call sites one chain search visits: the search
// is exhaustive, and a pathological call graph must not make it explode.
const maxTailSearch = 4096

var errNoChain = errors.New("no unambiguous tail-call chain")

// tailSite is a call site and the module whose DWARF holds it.
type tailSite struct {
	site symbols.CallSite
	mod  *modules.Module
}

// returnPC is the site's run-time return address.
func (t tailSite) returnPC() uint64 { return t.site.ReturnPC + t.mod.Bias }

// tailChain is gdb's call_site_chain: the intermediate call sites from the
// caller's end (sites[0], in the function the caller called) to the
// callee's end, of which the first callers and the last callees are
// unambiguous.
type tailChain struct {
	sites            []tailSite
	callers, callees int
}

// tailSearch is one chain search (call_site_find_chain_1).
type tailSearch struct {
	s        *Session
	mods     modules.List
	calleePC uint64
	visited  map[uint64]bool
	path     []tailSite
	result   *tailChain
	steps    int
}

// candidate intersects a found path with the result so far (gdb's
// chain_candidate); false when nothing unambiguous is left.
func (ts *tailSearch) candidate() bool {
	chain := ts.path
	if ts.result == nil {
		ts.result = &tailChain{sites: append([]tailSite(nil), chain...), callers: len(chain), callees: len(chain)}
		return true
	}
	r := ts.result
	same := func(a, b tailSite) bool { return a.mod == b.mod && a.site.Offset == b.site.Offset }
	for i := 0; i < min(r.callers, len(chain)); i++ {
		if !same(r.sites[i], chain[i]) {
			r.callers = i
			break
		}
	}
	for i := 0; i < min(r.callees, len(chain)); i++ {
		if !same(r.sites[len(r.sites)-1-i], chain[len(chain)-1-i]) {
			r.callees = i
			break
		}
	}
	if r.callers == 0 && r.callees == 0 {
		ts.result = nil
		return false
	}
	return true
}

// targets resolves a call site's callee to run-time addresses.
func (ts *tailSearch) targets(t tailSite) (uint64, error) {
	switch t.site.Target.Kind {
	case symbols.TargetAddress:
		return t.site.Target.Addr + t.mod.Bias, nil
	case symbols.TargetName:
		if a, ok := ts.s.functionByName(ts.mods, t.site.Target.Name); ok {
			return a, nil
		}
	}
	return 0, errNoChain // an indirect call, or a callee nowhere to be found
}

// visit is call_site_find_chain_2: follow site t towards the callee.
func (ts *tailSearch) visit(t tailSite) (bool, error) {
	if ts.steps++; ts.steps > maxTailSearch {
		return false, errNoChain
	}
	target, err := ts.targets(t)
	if err != nil {
		return false, err
	}
	if target == ts.calleePC {
		return ts.candidate(), nil
	}
	sites, err := ts.s.tailCallsOf(ts.mods, target)
	if err != nil {
		return false, err
	}
	for _, next := range sites {
		key := next.returnPC()
		if ts.visited[key] {
			continue
		}
		ts.visited[key] = true
		ts.path = append(ts.path, next)
		ok, err := ts.visit(next)
		if err != nil || !ok {
			return ok, err
		}
		delete(ts.visited, key)
		ts.path = ts.path[:len(ts.path)-1]
	}
	return true, nil
}

// tailCallsOf returns the tail calls of the function whose run-time entry
// is addr; an error when DWARF describes no function starting there.
func (s *Session) tailCallsOf(mods modules.List, addr uint64) ([]tailSite, error) {
	m := mods.ForAddress(addr)
	if m == nil {
		return nil, errNoChain
	}
	b, _ := s.Binary(m)
	if b == nil {
		return nil, errNoChain
	}
	sites, ok, _ := b.TailCallSites(addr - m.Bias)
	if !ok {
		return nil, errNoChain
	}
	out := make([]tailSite, len(sites))
	for i, site := range sites {
		out[i] = tailSite{site, m}
	}
	return out, nil
}

// functionByName finds a function by its ELF symbol in the process's
// modules, the executable first: a global definition wins over a local one
// (gdb's lookup_minimal_symbol).
func (s *Session) functionByName(mods modules.List, name string) (uint64, bool) {
	var local uint64
	found := false
	try := func(m *modules.Module) bool {
		b, _ := s.Binary(m)
		if b == nil {
			return false
		}
		addr, global, ok := b.FunctionAddress(name)
		if ok && global {
			local, found = addr+m.Bias, true
			return true
		}
		if ok && !found {
			local, found = addr+m.Bias, true
		}
		return false
	}
	main := mods.Main()
	if main != nil && try(main) {
		return local, true
	}
	for _, m := range mods {
		if m != main && try(m) {
			return local, true
		}
	}
	return local, found
}

// findTailChain returns the chain between a caller whose return address
// is ret (in module cm) and a callee function entered at calleePC.
func (s *Session) findTailChain(mods modules.List, cm *modules.Module, b *symbols.Binary, ret, calleePC uint64) *tailChain {
	site, ok, _ := b.CallSiteAt(ret - cm.Bias)
	if !ok {
		return nil
	}
	// The common case first, without the search's state: the caller
	// called the callee.
	if site.Target.Kind == symbols.TargetAddress && site.Target.Addr+cm.Bias == calleePC {
		return nil
	}
	ts := &tailSearch{s: s, mods: mods, calleePC: calleePC, visited: map[uint64]bool{}}
	if _, err := ts.visit(tailSite{site, cm}); err != nil {
		return nil
	}
	if ts.result == nil || len(ts.result.sites) == 0 {
		return nil
	}
	return ts.result
}

// frames lists the chain's frames innermost first (gdb's pretend_pc order):
// the callee's end, then, unless that covers the whole chain, the caller's.
func (c *tailChain) frames() []tailSite {
	var out []tailSite
	n := len(c.sites)
	for i := 0; i < c.callees; i++ {
		out = append(out, c.sites[n-1-i])
	}
	if c.callees != n {
		for i := c.callers - 1; i >= 0; i-- {
			out = append(out, c.sites[i])
		}
	}
	return out
}

// addTailCalls inserts tail-call frames into t between each frame unwound
// by CFI and its caller, and renumbers the frames.
func (s *Session) addTailCalls(mods modules.List, st *procState, t *unwind.Trace) {
	fr := t.Frames
	var out []unwind.StackFrame
	// Frames come in runs of one module: find its file once per run.
	var lastMod *modules.Module
	var lastBin *symbols.Binary
	// and a recursion repeats one caller and callee: search once.
	var lastRet, lastCallee uint64
	var lastChain *tailChain
	for i := 0; i < len(fr); i++ {
		if out != nil {
			out = append(out, fr[i])
		}
		// The callee: the outermost frame of a physical frame (inline
		// frames come first) unwound by CFI; the caller: the next physical
		// frame, entered by a call.
		if i+1 >= len(fr) || fr[i+1].Physical == fr[i].Physical {
			continue
		}
		callee, caller := &fr[i], &fr[i+1]
		if callee.Kind != unwind.KindNormal || callee.Method != unwind.MethodCFI || !callee.HasSymbol ||
			callee.Symbol.FuncStart == 0 || caller.Kind == unwind.KindSignal || caller.LookupPC == caller.PC || caller.Module == nil {
			continue
		}
		cm, _ := caller.Module.Client.(*modules.Module)
		if cm == nil {
			continue
		}
		if cm != lastMod {
			lastMod = cm
			lastBin, _ = s.Binary(cm)
		}
		if lastBin == nil {
			continue
		}
		chain := lastChain
		if caller.PC != lastRet || callee.Symbol.FuncStart != lastCallee {
			chain = s.findTailChain(mods, cm, lastBin, caller.PC, callee.Symbol.FuncStart)
			lastRet, lastCallee, lastChain = caller.PC, callee.Symbol.FuncStart, chain
		}
		if chain == nil {
			continue
		}
		if out == nil {
			out = append(make([]unwind.StackFrame, 0, len(fr)+4), fr[:i+1]...)
		}
		for _, ts := range chain.frames() {
			out = append(out, s.tailFrame(mods, st, ts, callee))
		}
	}
	if out != nil {
		for i := range out {
			out[i].Index = i
		}
		t.Frames = out
	}
}

// tailFrame makes the frame of a tail call: at the address after the jump,
// named (as gdb names it) by the innermost function at the jump.
func (s *Session) tailFrame(mods modules.List, st *procState, ts tailSite, callee *unwind.StackFrame) unwind.StackFrame {
	pc := ts.returnPC()
	f := unwind.StackFrame{PC: pc, LookupPC: pc - 1, SP: callee.CFA, Kind: unwind.KindTailCall,
		Physical: callee.Physical, Method: unwind.MethodNone}
	c := threadCallbacks{s: s, mods: mods, st: st}
	f.Module, _ = c.LookupModule(pc - 1)
	if b, _ := s.Binary(ts.mod); b != nil {
		if syms, _ := b.Lookup(pc - 1 - ts.mod.Bias); len(syms) > 0 {
			in := syms[0]
			f.Symbol = unwind.Symbol{Function: in.Function, LinkageName: in.LinkageName, File: in.File, Line: in.Line, Column: in.Column, DeclLine: in.DeclLine}
			if start := syms[len(syms)-1].Start; start != 0 {
				f.Symbol.FuncStart = start + ts.mod.Bias
			}
			f.HasSymbol = true
		}
	}
	return f
}
