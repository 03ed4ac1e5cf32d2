package dap

import "github.com/sondedbg/sonde/target"

// stepEndLogpoints runs the log points planted where a step ended, as gdb
// runs a dprintf whose location a step stops at: the thread goes on from
// there over the breakpoint without a hit, so the line would run unlogged
// (found in the sixth real-program trial: lz4's logpoint printed four of
// its five blocks when a next ended on its line). Their conditions and hit
// counts apply as at a hit.
func (d *debuggee) stepEndLogpoints(th *target.Context) {
	regs, err := th.Registers()
	if err != nil {
		return
	}
	pc := regs.PC()
	t := &d.s.bps
	var at []*target.Breakpoint
	t.mu.Lock()
	for tb, cb := range t.byPlanted {
		if cb.logMsg != "" && tb.Spec.Addr == pc && tb.Process == th.Process() {
			at = append(at, tb)
		}
	}
	t.mu.Unlock()
	for _, tb := range at {
		d.onHit(th, tb)
	}
}
