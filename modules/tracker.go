package modules

import (
	"debug/elf"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/target"
)

// Change is what one dynamic-linker event changed.
type Change struct {
	Process        *target.Context
	Added, Removed List
}

// Tracker keeps a live process's module list current. It plants an eventpoint
// on the dynamic linker's debug hook (_dl_debug_state, which the linker calls
// around every load and unload) and rescans when the linker says its list is
// consistent again. The process runs on unless StopOnChange is set, in which
// case the thread that loaded or unloaded something stops with
// ReasonSharedLibrary (TCF's "Shared Library" stop).
type Tracker struct {
	proc     *target.Context
	onChange func(Change)
	// StopOnChange makes a load or unload stop the process.
	StopOnChange atomic.Bool

	mu     sync.Mutex
	mods   List
	bp     *target.Breakpoint
	hook   uint64
	remove func()
	closed bool
}

// Track starts following proc's modules. onChange, if not nil, is called for
// every load or unload, from the eventpoint's handler: the thread that loaded or
// unloaded is still stopped at the linker's hook.
func Track(proc *target.Context, onChange func(Change)) (*Tracker, error) {
	tr := &Tracker{proc: proc.Process(), onChange: onChange}
	mods, err := Find(tr.proc)
	if err != nil {
		return nil, err
	}
	tr.mods = mods
	if err := tr.plant(); err != nil {
		return nil, err
	}
	// exec replaces the address space and forgets breakpoints: plant again,
	// before the new program's dynamic linker loads its libraries.
	tr.remove = proc.Target().OnExec(func(p *target.Context) {
		if p == tr.proc {
			tr.refreshAfterExec()
		}
	})
	return tr, nil
}

// Modules returns the current module list.
func (tr *Tracker) Modules() List {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.mods
}

// Close removes the eventpoint.
func (tr *Tracker) Close() error {
	tr.mu.Lock()
	tr.closed = true
	bp := tr.bp
	tr.bp = nil
	tr.mu.Unlock()
	if tr.remove != nil {
		tr.remove()
	}
	if bp != nil && !tr.proc.Exited() {
		return tr.proc.Target().RemoveBreakpoint(bp)
	}
	return nil
}

// hookAddress finds _dl_debug_state: from r_debug.r_brk when the linker has
// published it, else from the interpreter's dynamic symbols (so the hook is
// planted even at the first instruction, before the linker ran).
func hookAddress(p Process, mods List) (uint64, error) {
	if rd, err := FindRDebug(p, mods.Main()); err == nil && rd != nil && rd.Brk != 0 {
		return rd.Brk, nil
	}
	interp := mods.Interpreter()
	if interp == nil {
		return 0, nil // static executable: nothing is ever loaded
	}
	f, err := elf.Open(interp.Path)
	if err != nil {
		return 0, fmt.Errorf("modules: opening the dynamic linker %s: %w", interp.Path, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return 0, fmt.Errorf("modules: dynamic symbols of %s: %w", interp.Path, err)
	}
	for _, s := range syms {
		if s.Name == "_dl_debug_state" && s.Value != 0 {
			return s.Value + interp.Bias, nil
		}
	}
	return 0, fmt.Errorf("modules: %s has no _dl_debug_state symbol", interp.Path)
}

func (tr *Tracker) plant() error {
	addr, err := hookAddress(tr.proc, tr.mods)
	if err != nil || addr == 0 {
		return err
	}
	bp, err := tr.proc.Target().SetBreakpoint(tr.proc, target.BreakpointSpec{
		Addr: addr, Internal: true, OnHit: tr.hit,
	})
	if err != nil {
		return err
	}
	tr.mu.Lock()
	tr.bp, tr.hook = bp, addr
	tr.mu.Unlock()
	return nil
}

func (tr *Tracker) refreshAfterExec() {
	tr.mu.Lock()
	if tr.closed {
		tr.mu.Unlock()
		return
	}
	planted := false
	for _, bp := range tr.proc.Target().Breakpoints(tr.proc) {
		planted = planted || bp == tr.bp
	}
	tr.mu.Unlock()
	if planted {
		return
	}
	if mods, err := Find(tr.proc); err == nil {
		tr.mu.Lock()
		tr.mods = mods
		tr.mu.Unlock()
		tr.plant()
	}
}

// hit runs when a thread reaches the linker's hook. The list is rescanned only
// once the linker says it is consistent again.
func (tr *Tracker) hit(thread *target.Context, _ *target.Breakpoint) *target.SuspendReason {
	tr.mu.Lock()
	old := tr.mods
	tr.mu.Unlock()
	rd, err := FindRDebug(tr.proc, old.Main())
	if err != nil || rd == nil || rd.State != rStateConsist {
		return nil
	}
	mods, err := Find(tr.proc)
	if err != nil {
		return nil
	}
	added, removed := diff(old, mods)
	tr.mu.Lock()
	tr.mods = mods
	tr.mu.Unlock()
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	tr.proc.Target().MemoryMapChanged(tr.proc)
	if tr.onChange != nil {
		tr.onChange(Change{Process: tr.proc, Added: added, Removed: removed})
	}
	if tr.StopOnChange.Load() {
		return &target.SuspendReason{Kind: target.ReasonSharedLibrary}
	}
	return nil
}

func key(m *Module) string { return fmt.Sprintf("%s@%x", m.Name, m.Start) }

func diff(old, cur List) (added, removed List) {
	was := map[string]bool{}
	for _, m := range old {
		was[key(m)] = true
	}
	now := map[string]bool{}
	for _, m := range cur {
		now[key(m)] = true
		if !was[key(m)] {
			added = append(added, m)
		}
	}
	for _, m := range old {
		if !now[key(m)] {
			removed = append(removed, m)
		}
	}
	return added, removed
}
