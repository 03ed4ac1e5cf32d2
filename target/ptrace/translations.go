package ptrace

import (
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate"
)

// Translations returns the translation table of the process's address space
// (translate.Table): generated code that registers its ranges there (probes'
// trampolines, displaced copies) has every stop, fault or signal inside it
// reported at the application pc with the application's registers. The table
// is safe for concurrent use; it lives as long as the address space.
func (h *Halted) Translations() *translate.Table { return &h.p.memOwner.tt }

// redirects are resume redirections: a thread resumed at From in process
// pid goes on at To instead (generated code that does what the application's
// code at From does without the instrumentation there: a conditional
// probe's relocated instructions, so that resuming from the stop a probe
// reported does not run its payload again, as resuming from a breakpoint
// steps over it).
type redirects struct {
	n  atomic.Int32
	mu sync.Mutex
	m  map[redirectKey]uint64
}

type redirectKey struct {
	pid  int
	from uint64
}

var redirectsByBackend sync.Map // *Backend -> *redirects

// AddResumeRedirect makes threads of process pid (its address space) that
// resume at from go on at to; remove undoes it.
func (b *Backend) AddResumeRedirect(pid int, from, to uint64) (remove func()) {
	v, _ := redirectsByBackend.LoadOrStore(b, &redirects{m: map[redirectKey]uint64{}})
	r := v.(*redirects)
	k := redirectKey{pid, from}
	r.mu.Lock()
	if _, had := r.m[k]; !had {
		r.n.Add(1)
	}
	r.m[k] = to
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			if cur, ok := r.m[k]; ok && cur == to {
				delete(r.m, k)
				r.n.Add(-1)
			}
			r.mu.Unlock()
		})
	}
}

// redirect moves a thread about to resume at a redirected address to where
// it goes on instead.
func (b *Backend) redirect(th *thread) {
	v, ok := redirectsByBackend.Load(b)
	if !ok {
		return
	}
	r := v.(*redirects)
	if r.n.Load() == 0 {
		return
	}
	pc := th.pc()
	r.mu.Lock()
	to, ok := r.m[redirectKey{th.proc.memOwner.pid, pc}]
	r.mu.Unlock()
	if ok {
		th.setReg(offRIP, to)
	}
}

// AddRestoreHook implements target.RestoreHooker (see the method in
// displaced.go); the assertion keeps the two in step.
var _ target.RestoreHooker = (*Backend)(nil)
