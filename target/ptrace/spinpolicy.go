package ptrace

import "time"

// workKind is what woke the tracer thread: a request from another goroutine,
// or a tracee status.
type workKind uint8

const (
	workRequest workKind = iota
	workStatus
	workKinds
)

// spinPolicy decides whether the tracer thread spins after work (see spin).
//
// Spinning pays when the next piece of work comes within the budget, and
// whether it does depends on what the last work was. After a resume, the
// tracee usually traps again soon. After a stop, it is the client's turn: a
// client that only resumes (a breakpoint loop, a conditional breakpoint
// driven from outside) answers within ~100 µs; one that shows the stop first
// (a debugger fetching the stack, names and lines, variables) answers a
// millisecond or a human later, and a tracer thread spinning meanwhile only
// takes a CPU from the client and the agent serving it — on a 2-CPU machine,
// the first stack walk after a stop took ~250 µs with the spin against ~160
// without.
//
// So the policy remembers, per kind of work, whether the next work came
// within the budget the last three times (also while the thread slept: the
// gap is measured either way), and spins only if it did at least once.
type spinPolicy struct {
	lastKind workKind
	lastEnd  time.Time // when the tracer thread finished its last work
	// short[k]: bit i is set when, i+1 times ago, the work after work of
	// kind k came within the spin budget.
	short [workKinds]uint8
}

// spinHistory is how many past gaps per kind the policy looks at.
const spinHistory = 3

func newSpinPolicy() spinPolicy {
	var p spinPolicy
	for k := range p.short {
		p.short[k] = 1<<spinHistory - 1 // spin until shown otherwise
	}
	return p
}

// arrived records that work of kind k came at now.
func (p *spinPolicy) arrived(k workKind, now time.Time) {
	if !p.lastEnd.IsZero() {
		bit := uint8(0)
		if now.Sub(p.lastEnd) < spinBudget {
			bit = 1
		}
		last := &p.short[p.lastKind]
		*last = (*last<<1 | bit) & (1<<spinHistory - 1)
	}
	p.lastKind = k
}

// finished records that the work ended at now.
func (p *spinPolicy) finished(now time.Time) { p.lastEnd = now }

// worthSpinning reports whether work is likely to come within the budget
// after the last work.
func (p *spinPolicy) worthSpinning() bool { return p.short[p.lastKind] != 0 }
