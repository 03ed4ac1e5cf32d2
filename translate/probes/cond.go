package probes

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sondedbg/sonde/target"
)

// Conditions are compiled into the payload, so that a probe acts (counts,
// or traps to sonde) only when one holds and costs nanoseconds when it does
// not: Left Op Right, Left a general register or the 64-bit word at a
// (static) address, Right a constant, the comparison signed.

// Operand is a register (Reg, "rdi", "r8", ...) or, when Reg is "", the
// 64-bit word at Addr.
type Operand struct {
	Reg  string
	Addr uint64
}

// Cond is Left Op Right.
type Cond struct {
	Left  Operand
	Op    string // ==, !=, <, <=, >, >=
	Right int64
}

func (c Cond) String() string {
	l := c.Left.Reg
	if l == "" {
		l = fmt.Sprintf("*%#x", c.Left.Addr)
	}
	return fmt.Sprintf("%s %s %d", l, c.Op, c.Right)
}

var regNumbers = map[string]int{"rax": 0, "rcx": 1, "rdx": 2, "rbx": 3, "rbp": 5, "rsi": 6, "rdi": 7,
	"r8": 8, "r9": 9, "r10": 10, "r11": 11, "r12": 12, "r13": 13, "r14": 14, "r15": 15}

// skipIf is the jcc rel32 second opcode byte that skips the action when Op
// does not hold.
var skipIf = map[string]byte{"==": 0x85, "!=": 0x84, "<": 0x8d, "<=": 0x8f, ">": 0x8e, ">=": 0x8c}

// Check validates a condition.
func (c Cond) Check() error {
	if _, ok := skipIf[c.Op]; !ok {
		return fmt.Errorf("condition %s: unknown comparison %q", c, c.Op)
	}
	if c.Left.Reg != "" {
		if _, ok := regNumbers[c.Left.Reg]; !ok {
			return fmt.Errorf("condition %s: register %q cannot be tested (rsp and rip are not offered)", c, c.Left.Reg)
		}
	}
	return nil
}

// Holds evaluates the condition on a stopped thread (the breakpoint
// fallback does what the payload would).
func (c Cond) Holds(th *target.Context) (bool, error) {
	var v uint64
	if c.Left.Reg != "" {
		regs, err := th.Registers()
		if err != nil {
			return false, err
		}
		r := regs.Arch.ByName(c.Left.Reg)
		if r == nil {
			return false, fmt.Errorf("no register %s", c.Left.Reg)
		}
		if v, err = regs.Uint64(r); err != nil {
			return false, err
		}
	} else {
		var b [8]byte
		if _, err := th.Process().ReadMemory(c.Left.Addr, b[:]); err != nil {
			return false, err
		}
		v = binary.LittleEndian.Uint64(b[:])
	}
	l := int64(v)
	switch c.Op {
	case "==":
		return l == c.Right, nil
	case "!=":
		return l != c.Right, nil
	case "<":
		return l < c.Right, nil
	case "<=":
		return l <= c.Right, nil
	case ">":
		return l > c.Right, nil
	case ">=":
		return l >= c.Right, nil
	}
	return false, errors.New("unknown comparison " + c.Op)
}

// condPayload appends: save flags and rax, load Left into rax, compare with
// Right, skip action unless the condition holds, restore. action appends the
// code run when it holds (rax and the flags are the payload's there).
func (e *emitter) condPayload(app uint64, c Cond, action func(e *emitter) error) error {
	pay := Entry{AppPC: app, Payload: true, AppRegs: true, FlagsAt: -1}
	e.add(leaSkipRedZone, pay)
	pay.SPAdjust = redZone
	e.add(pushfq, pay)
	pay.SPAdjust = redZone + 8
	e.add([]byte{0x50}, pay) // push %rax
	body := Entry{AppPC: app, Payload: true, SPAdjust: redZone + 16, FlagsAt: 8, Spills: map[string]int64{"rax": 0, "rflags": 8}}
	var code []byte
	if c.Left.Reg != "" {
		n := regNumbers[c.Left.Reg]
		rex := byte(0x48)
		if n >= 8 {
			rex |= 0x04 // REX.R
		}
		code = append(code, rex, 0x89, 0xc0|byte(n&7)<<3) // mov %reg,%rax
	} else {
		ld := []byte{0x48, 0x8b, 0x05, 0, 0, 0, 0} // mov disp(%rip),%rax
		if err := ripRel32(ld, 3, e.pc(), len(ld), c.Left.Addr); err != nil {
			return fmt.Errorf("condition %s: %w", c, err)
		}
		code = append(code, ld...)
	}
	if c.Right == int64(int32(c.Right)) {
		cmp := []byte{0x48, 0x3d, 0, 0, 0, 0} // cmp $imm32,%rax
		binary.LittleEndian.PutUint32(cmp[2:], uint32(int32(c.Right)))
		code = append(code, cmp...)
	} else {
		code = append(code, 0x51, 0x48, 0xb9) // push %rcx; movabs $imm64,%rcx
		code = binary.LittleEndian.AppendUint64(code, uint64(c.Right))
		code = append(code, 0x48, 0x39, 0xc8, 0x59) // cmp %rcx,%rax; pop %rcx
	}
	e.add(code, body)
	jcc := e.pc()
	e.add([]byte{0x0f, skipIf[c.Op], 0, 0, 0, 0}, body)
	if err := action(e); err != nil {
		return err
	}
	skip := e.pc()
	binary.LittleEndian.PutUint32(e.code[jcc-e.base+2:], uint32(int32(skip-(jcc+6))))
	e.add([]byte{0x58}, body) // pop %rax
	e.add(popfq, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone + 8, FlagsAt: 0})
	e.add(leaBackRedZone, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone, FlagsAt: -1})
	return nil
}

// AddCountIf adds a probe that counts the hits where c holds; the condition
// is evaluated in the payload (no trap). A site that cannot be patched is a
// breakpoint that evaluates c in sonde.
func (s *Set) AddCountIf(loc string, addr uint64, fn *Function, c Cond) (*Probe, error) {
	return s.addIf(loc, addr, fn, c, nil)
}

// AddTrapIf adds a probe that traps to sonde only when c holds: onHit runs
// then, with the thread stopped inside the payload (the argument registers
// are the application's; rax and rsp are not). Hits counts those traps.
func (s *Set) AddTrapIf(loc string, addr uint64, fn *Function, c Cond, onHit func(thread *target.Context)) (*Probe, error) {
	if onHit == nil {
		onHit = func(*target.Context) {}
	}
	return s.addIf(loc, addr, fn, c, onHit)
}

func (s *Set) addIf(loc string, addr uint64, fn *Function, c Cond, onHit func(*target.Context)) (*Probe, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	p := &Probe{Location: loc, Addr: addr, set: s, Kind: KindProbe, onHit: onHit}
	why := "no function symbol with a size contains the address, so the site cannot be checked"
	if fn != nil {
		why = ""
		var trapAt uint64
		shadowed := s.shadow(*fn)
		err := func() error {
			site, err := Analyze(shadowed, addr)
			if err != nil {
				return err
			}
			return s.patchIn(p, shadowed, []Site{site}, 8, func(data uint64) map[uint64]hook {
				p.counter = data
				return map[uint64]hook{site.Addr: func(e *emitter, app uint64) error {
					return e.condPayload(app, c, func(e *emitter) error {
						if onHit == nil {
							inc, err := lockIncRIP(e.pc(), data)
							if err == nil {
								e.add(inc, Entry{AppPC: app, Payload: true, SPAdjust: redZone + 16, FlagsAt: 8, Spills: map[string]int64{"rax": 0, "rflags": 8}})
							}
							return err
						}
						trapAt = e.pc()
						e.add([]byte{0x90}, Entry{AppPC: app, Payload: true, SPAdjust: redZone + 16, FlagsAt: 8, Spills: map[string]int64{"rax": 0, "rflags": 8}})
						return nil
					})
				}}
			})
		}()
		var ue *UnsafeError
		switch {
		case err == nil:
		case errors.As(err, &ue):
			why = ue.Reason
		default:
			why = err.Error()
		}
		if err == nil && onHit != nil {
			// The trap is a breakpoint of the backend's on the nop the
			// payload reaches only when the condition holds.
			bp, err := s.tg.SetBreakpoint(s.proc, target.BreakpointSpec{Addr: trapAt, Kind: target.BreakpointSoftware, Internal: true,
				OnHit: func(th *target.Context, _ *target.Breakpoint) *target.SuspendReason {
					p.bpHits.Add(1)
					onHit(th)
					return nil
				}})
			if err != nil {
				s.removeProbe(p)
				why = "no breakpoint in the trampoline: " + err.Error()
			} else {
				p.bp, p.trapInCache = bp, true
			}
		}
	}
	if why != "" {
		p.Kind, p.patches, p.counter = KindBreakpoint, nil, 0
		user := onHit
		p.onHit = nil
		if err := s.addBreakpoint(p, why); err != nil {
			return nil, err
		}
		// The breakpoint counts every hit; the condition decides what counts.
		p.cond = &c
		p.onHit = func(th *target.Context) {
			if ok, _ := c.Holds(th); ok {
				p.condHits.Add(1)
				if user != nil {
					user(th)
				}
			}
		}
	}
	s.mu.Lock()
	s.probes = append(s.probes, p)
	s.mu.Unlock()
	return p, nil
}

// removeProbe takes an installed jump probe out again (a half-made one).
func (s *Set) removeProbe(p *Probe) {
	s.backend.Halt(s.proc, func(h ptraceHalted) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for k := len(p.patches) - 1; k >= 0; k-- {
			h.WriteText(p.patches[k].site.Addr, p.patches[k].orig)
		}
		p.installed = false
		s.publish(nil)
		return nil
	})
}
