package main

import (
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate/probes"
)

// shortReach is how far a short (rel8) branch goes.
const shortReach = 128

// withNeighbors adds to fn the functions within a short branch of it, whose
// branches into a patched range the probe's site analysis must see
// (probes.Function.Neighbors). Unknown neighbours are left out.
func withNeighbors(sess *session.Session, proc *target.Context, fn *probes.Function) *probes.Function {
	near, err := sess.FunctionsNear(proc, fn.Lo, fn.Hi(), shortReach)
	if err != nil {
		return fn
	}
	for _, n := range near {
		if n.Hi-n.Lo > maxProbedFunction {
			continue
		}
		code := make([]byte, n.Hi-n.Lo)
		if k, _ := proc.ReadMemory(n.Lo, code); k == len(code) {
			fn.Neighbors = append(fn.Neighbors, probes.Function{Name: n.Name, Lo: n.Lo, Code: code})
		}
	}
	return fn
}
