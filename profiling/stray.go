package profiling

import (
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// strayCaller reports whether a caller frame's pc (depth > 0) lies in no
// mapped file and no anonymous executable memory of the sampled process: no code
// returns there, so the word the CFI read as its return address was not
// one. Go's outermost function, runtime.rt0_go, has CFI whose return
// address slot holds argc (the kernel's initial stack has no return
// address), and Go itself ends its tracebacks there. The walk ends before
// such a frame instead of showing it as [unknown].
func strayCaller(depth int, f *unwind.Frame, maps []snapshot.Mapping) bool {
	return depth > 0 && f.Module == nil && len(maps) > 0 && !shownByPerf(maps, f.PC)
}
