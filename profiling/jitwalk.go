package profiling

import "github.com/sondedbg/sonde/unwind/snapshot"

// jitCode answers the unwinder's JITNamer question for one sample: does an
// address lie in a function the process's JIT named in its perf map? A
// sample carries no JIT code bytes, so the frame-pointer check that a
// return address follows a call cannot be made there; a perf-map function
// holding it vouches instead. Without it a walk ended at the first
// function without CFI that a JIT called (node's Builtins_MathSqrt called
// from JS code: 23% of a node --perf-basic-prof dwarf recording's samples),
// where perf shows the JS caller.
type jitCode struct {
	b    *Builder
	pid  uint32
	maps []snapshot.Mapping
}

// NamedCode implements unwind.JITNamer.
func (j *jitCode) NamedCode(addr uint64) bool {
	if j == nil || j.b == nil || !inAnon(j.maps, addr) {
		return false
	}
	t := j.b.jit.table(j.pid)
	if t == nil {
		return false
	}
	_, ok := t.Lookup(addr)
	return ok
}
