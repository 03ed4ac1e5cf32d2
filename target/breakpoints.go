package target

import "fmt"

// BreakpointKind says how a breakpoint is implemented.
type BreakpointKind int

const (
	BreakpointSoftware BreakpointKind = iota // an int3 patched into the code, hidden from reads
	BreakpointHardware                       // an instruction breakpoint in a debug register
	Watchpoint                               // a data watchpoint in a debug register
)

func (k BreakpointKind) String() string {
	return [...]string{"software", "hardware", "watchpoint"}[k]
}

// Access is what a watchpoint watches.
type Access int

const (
	AccessWrite     Access = 1
	AccessReadWrite Access = 3
	// AccessRead asks for read-only watching; x86 cannot trap reads alone, so the
	// backend reports reads and writes (TCF clients expect the same).
	AccessRead Access = 2
)

// BreakpointSpec asks for a breakpoint.
type BreakpointSpec struct {
	Addr   uint64
	Kind   BreakpointKind
	Access Access // watchpoints
	Size   int    // watchpoints: 1, 2, 4 or 8, aligned to Size
	// Internal breakpoints belong to sonde itself (stepping, library events) and
	// are not reported as a stop reason to clients.
	Internal bool
	// OnHit, for an internal breakpoint, runs when a thread stops at it (on a
	// goroutine of the Target's, with the thread stopped; it may read memory and
	// registers). It returns nil to let the thread run on unseen by listeners, or
	// the reason to report the stop with (e.g. ReasonSharedLibrary). This is the
	// TCF agent's "eventpoint".
	OnHit func(thread *Context, bp *Breakpoint) *SuspendReason
	// Function is set for a breakpoint placed on a function by name: a
	// stop at it is shown in the frames gdb shows for one (see
	// session.HiddenInline); other breakpoints show the innermost frame.
	Function bool
}

func (s BreakpointSpec) String() string {
	if s.Kind == Watchpoint {
		return fmt.Sprintf("watchpoint 0x%x/%d", s.Addr, s.Size)
	}
	return fmt.Sprintf("%s breakpoint 0x%x", s.Kind, s.Addr)
}

// Breakpoint is a planted breakpoint of a process.
type Breakpoint struct {
	ID      int
	Spec    BreakpointSpec
	Process *Context
	hits    int64
}

// Hits returns how many times a thread stopped at it.
func (b *Breakpoint) Hits() int64 {
	b.Process.target.mu.Lock()
	defer b.Process.target.mu.Unlock()
	return b.hits
}

// CountHit records a hit. Backends call it when reporting the stop.
func (b *Breakpoint) CountHit() {
	b.Process.target.mu.Lock()
	b.hits++
	b.Process.target.mu.Unlock()
}
