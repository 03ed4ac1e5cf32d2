package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate/probes"
)

// --args at a probe: the payload records the six integer argument
// registers and the thread's ID (glibc's, read through %fs) into the
// probe's ring buffer, and sonde prints the records as it drains the ring
// — the program never stops. Where the site cannot take a jump, or the
// thread ID cannot be read in a payload, the hit traps to sonde as before
// (hitPrinter) and the report says why.

// argValues is what a record holds: rdi, rsi, rdx, rcx, r8, r9, tid.
func argValues(tidOff int64) []probes.Value {
	var out []probes.Value
	for _, r := range argRegs {
		out = append(out, probes.Value{Reg: r, Size: 8})
	}
	return append(out, probes.Value{FS: true, Off: tidOff, Size: 4, Signed: true})
}

// condExpr turns --if's condition into a probe condition.
func condExpr(c *probes.Cond) *probes.Expr {
	if c == nil {
		return nil
	}
	v := probes.Value{Reg: c.Left.Reg, Addr: c.Left.Addr, Size: 8, Signed: true}
	return &probes.Expr{Cmp: &probes.Compare{Value: v, Op: c.Op, Const: c.Right}}
}

// plantArgs puts an --args probe at a (with --if's condition, if any), or
// the trap it falls back to. tidErr is why the thread ID cannot be
// recorded (nil: it is at tidOff).
func (o *traceOptions) plantArgs(sess *session.Session, proc *target.Context, set *probes.Set, loc string, a uint64, probe bool, c *probes.Cond, tidOff int64, tidErr error, stdout, stderr io.Writer) error {
	trapPrint := hitPrinter(stdout, loc, a, o.asJSON)
	why := ""
	switch {
	case !probe:
	case tidErr != nil:
		why = "--args cannot record the thread ID in a probe: " + tidErr.Error()
	default:
		fn, err := functionAt(sess, proc, a)
		if err != nil {
			why = err.Error()
			break
		}
		rec := recordPrinter(stdout, loc, a, o.asJSON)
		_, _, err = set.AddRecordIf(loc, a, fn, condExpr(c), argValues(tidOff), rec, func(n uint64) {
			fmt.Fprintf(stderr, "sonde trace: %s: %d hits lost (the ring buffer holds %d records and sonde fell behind)\n", loc, n, probes.RingCap)
		})
		if err == nil {
			return nil
		}
		why = err.Error()
	}
	var p *probes.Probe
	var err error
	if c != nil {
		// A breakpoint that evaluates the condition in sonde.
		p, err = set.AddTrapIf(loc, a, nil, *c, trapPrint)
		if err == nil && probe {
			p.Fallback = why
		}
		return err
	}
	_, err = set.AddTrap(loc, a, why, trapPrint)
	return err
}

// recordPrinter prints one recorded hit as hitPrinter prints a trapped one.
func recordPrinter(w io.Writer, loc string, addr uint64, asJSON bool) func(vals []uint64) {
	var mu sync.Mutex
	return func(vals []uint64) {
		args := make([]string, 0, len(argRegs))
		for _, v := range vals[:len(argRegs)] {
			args = append(args, fmt.Sprintf("%#x", v))
		}
		tid := int(int64(vals[len(argRegs)]))
		mu.Lock()
		defer mu.Unlock()
		if asJSON {
			b, _ := json.Marshal(map[string]any{"hit": loc, "address": fmt.Sprintf("%#x", addr), "tid": tid, "args": args})
			fmt.Fprintf(w, "%s\n", b)
			return
		}
		fmt.Fprintf(w, "%s [%d] (%s)\n", loc, tid, strings.Join(args, ", "))
	}
}
