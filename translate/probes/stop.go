package probes

import (
	"errors"
	"fmt"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/translate"
)

// Conditional stops: a debugger's conditional breakpoint as a probe. The
// payload evaluates the compiled condition (Expr); only when it holds does
// the thread trap to sonde, at a point of the trampoline where every
// register is the application's (the backend then reports the stop at the
// probed address: the trampoline's translation table is in the address
// space's translate.Table), and resuming from that stop goes on at the
// relocated instructions (a resume redirect), so the payload does not run
// again, as resuming from a breakpoint steps over it. A false condition
// costs the program the payload's nanoseconds instead of a trap.

// AddStopIf adds a conditional stop at addr (named loc), inside fn: onHit
// runs when the condition holds, with the thread stopped (on the backend's
// event thread, as any eventpoint handler), and its reason, if not nil, is
// reported, at addr (x nil: at every hit). The stop's Breakpoint is what the reason names. An
// error (an *UnsafeError when the site cannot take a jump) means nothing
// was planted: the caller falls back to a breakpoint of its own.
func (s *Set) AddStopIf(loc string, addr uint64, fn *Function, x *Expr, onHit func(*target.Context, *target.Breakpoint) *target.SuspendReason) (*Probe, error) {
	if x != nil {
		if err := x.Check(); err != nil {
			return nil, err
		}
	}
	if fn == nil {
		return nil, &UnsafeError{Addr: addr, Reason: "no function symbol with a size contains the address, so the site cannot be checked"}
	}
	p := &Probe{Location: loc, Addr: addr, set: s, Kind: KindProbe, trapInCache: true}
	var trapAt, relocAt uint64
	shadowed := s.shadow(*fn)
	site, err := Analyze(shadowed, addr)
	if err != nil {
		return nil, err
	}
	err = s.patchIn(p, shadowed, []Site{site}, 8, func(data uint64) map[uint64]hook {
		p.counter = data
		return map[uint64]hook{site.Addr: func(e *emitter, app uint64) error {
			var err error
			trapAt, relocAt, err = e.stopPayload(app, x)
			return err
		}}
	})
	if err != nil {
		return nil, err
	}
	bp, err := s.tg.SetBreakpoint(s.proc, target.BreakpointSpec{Addr: trapAt, Kind: target.BreakpointSoftware, Internal: true,
		OnHit: func(th *target.Context, bp *target.Breakpoint) *target.SuspendReason {
			p.bpHits.Add(1)
			if onHit == nil {
				return nil
			}
			return onHit(th, bp)
		}})
	if err != nil {
		s.removeProbe(p)
		return nil, fmt.Errorf("probe %s at %#x: no breakpoint in its trampoline: %w", loc, addr, err)
	}
	p.bp = bp
	p.unredirect = s.backend.AddResumeRedirect(s.proc.PID(), site.Addr, relocAt)
	s.mu.Lock()
	s.probes = append(s.probes, p)
	s.mu.Unlock()
	return p, nil
}

// Breakpoint returns the breakpoint a probe's stops are reported with (a
// conditional stop's, in its trampoline), or that of a probe that fell back
// to a breakpoint; nil for a counting jump probe.
func (p *Probe) Breakpoint() *target.Breakpoint { return p.bp }

// Remove takes one probe out: the application's bytes go back under it (with
// every thread stopped) and its breakpoint goes. Its trampoline stays in the
// code cache (a thread may still be running in it) until the set is closed.
func (s *Set) Remove(p *Probe) error {
	var errs []error
	if p.ring != nil {
		p.ring.Drain()
	}
	if p.unredirect != nil {
		p.unredirect()
		p.unredirect = nil
	}
	s.mu.Lock()
	gone := s.gone || s.exited.Load()
	s.mu.Unlock()
	if p.bp != nil {
		if err := s.tg.RemoveBreakpoint(p.bp); err != nil && !gone {
			errs = append(errs, err)
		}
		p.bp = nil
	}
	if !gone && p.installed {
		err := s.backend.Halt(s.proc, func(h *ptrace.Halted) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			var errs []error
			for k := len(p.patches) - 1; k >= 0; k-- {
				pt := p.patches[k]
				if err := h.WriteText(pt.site.Addr, pt.orig); err != nil {
					errs = append(errs, fmt.Errorf("probe %s: restore %#x: %w", p.Location, pt.site.Addr, err))
				}
			}
			if len(errs) == 0 {
				p.installed = false
			}
			s.publish(nil)
			return errors.Join(errs...)
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	for i, q := range s.probes {
		if q == p && !p.installed {
			s.probes = append(s.probes[:i:i], s.probes[i+1:]...)
			break
		}
	}
	for i, r := range s.rings {
		if r == p.ring && !p.installed {
			s.rings = append(s.rings[:i:i], s.rings[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

// Len returns the number of probes in the set.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.probes)
}

// translations converts a trampoline's table to entries of the address
// space's translate.Table, owned by owner.
func (t *Table) translations(owner string) []translate.Entry {
	var out []translate.Entry
	for _, en := range t.Entries {
		if en.Hi <= en.Lo {
			continue
		}
		te := translate.Entry{Start: en.Lo, End: en.Hi, AppPC: en.AppPC, SPAdjust: en.SPAdjust, Owner: owner,
			RegsEqual: en.AppRegs}
		if en.FlagsAt >= 0 {
			te.FlagsSpilled, te.FlagsAt = true, en.FlagsAt
		}
		if !en.AppRegs && en.Spills != nil {
			// The payload clobbered only what it spilled.
			te.RegsEqual = true
			for name, off := range en.Spills {
				if name == "rflags" {
					te.FlagsSpilled, te.FlagsAt = true, off
					continue
				}
				n, ok := regNumbers[name]
				if !ok {
					te.RegsEqual = false
					continue
				}
				te.Spills = append(te.Spills, translate.Spill{Reg: translate.Reg(n), StackOff: off})
			}
		}
		out = append(out, te)
	}
	return out
}

// addTranslations registers pts' trampolines in the address space's
// translation table. Called with s.mu held and every thread stopped.
func (s *Set) addTranslations(h *ptrace.Halted, owner string, pts []patch) {
	s.tt = h.Translations()
	for _, pt := range pts {
		for _, te := range pt.table.translations(owner) {
			if err := s.tt.Add(te); err == nil {
				s.ttStarts = append(s.ttStarts, te.Start)
			}
		}
	}
}

// dropTranslations removes every entry the set registered (its caches are
// gone). Called with s.mu held.
func (s *Set) dropTranslations() {
	if s.tt == nil {
		return
	}
	for _, a := range s.ttStarts {
		s.tt.Remove(a)
	}
	s.ttStarts = nil
}
