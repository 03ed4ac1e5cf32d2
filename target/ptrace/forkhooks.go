package ptrace

import "sync"

// TextPatch is a range of a process's text that a library above the backend
// (translate/probes) replaced, with the application's bytes under it.
type TextPatch struct {
	Addr uint64
	Orig []byte
}

// forkHooksByBackend holds the hooks asked, at the first stop of a fork
// child, which ranges of the parent's text they patched (OnForkChild).
var forkHooksByBackend sync.Map // *Backend -> *hookSet[func(parentPID int) []TextPatch]

// OnForkChild registers f to be asked, on the tracer thread, when a traced
// process forks, before the child runs its first instruction: the ranges of
// the parent's text f's owner patched. Their application bytes are written
// into the child's private copy of memory, as the bytes under software
// breakpoints are: a child that is not followed must not run code whose
// trampolines sonde neither reads nor removes (and would never be text
// byte-identical to its file again). Not for vfork children, which share
// the parent's memory. f must not wait for the tracer thread. remove
// unregisters it.
func (b *Backend) OnForkChild(f func(parentPID int) []TextPatch) (remove func()) {
	return hookSetOf[func(int) []TextPatch](&forkHooksByBackend, b).add(f)
}

// restoreForkPatches writes the application's bytes under the parent's
// patched ranges (OnForkChild) into the fork child p's memory.
func (b *Backend) restoreForkPatches(p *process) {
	if p.parent == nil || p.mem == nil {
		return
	}
	for _, f := range registered[func(int) []TextPatch](&forkHooksByBackend, b) {
		for _, pt := range f(p.parent.pid) {
			p.mem.WriteAt(pt.Orig, int64(pt.Addr))
		}
	}
}
