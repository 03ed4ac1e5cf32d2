package ptrace

import (
	"encoding/binary"
	"fmt"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/target"
)

// Offsets in struct user_regs_struct that the backend itself uses.
const (
	generalSize = 27 * 8
	offRBP      = 32
	offRIP      = 128
	offEFLAGS   = 144
	offRSP      = 152

	xstateMax = 16384 // larger than any XSAVE area the kernel reports (AMX: ~11 KiB)

	eflagsRF = 1 << 16 // resume flag: do not re-trigger an instruction breakpoint
)

// encodingOffset maps an x86 register encoding (0 rax ... 15 r15) to its offset in
// user_regs_struct.
var encodingOffset = [16]int{80, 88, 96, 40, 152, 32, 104, 112, 72, 64, 56, 48, 24, 16, 8, 0}

// loadRegs fills the general-register cache of a stopped thread.
func (th *thread) loadRegs() error {
	if th.haveRegs {
		return nil
	}
	n, err := getRegSet(th.tid, ntPRStatus, th.regs[:])
	if err != nil {
		return err
	}
	if n != generalSize {
		return fmt.Errorf("NT_PRSTATUS gave %d bytes, want %d", n, generalSize)
	}
	th.haveRegs = true
	return nil
}

func (th *thread) loadXState() error {
	if th.haveX {
		return nil
	}
	buf := make([]byte, xstateMax)
	n, err := getRegSet(th.tid, ntX86XState, buf)
	if err != nil {
		return err
	}
	th.xstate = buf[:n:n]
	th.haveX = true
	return nil
}

func (th *thread) invalidateRegs() { th.haveRegs, th.haveX = false, false }

func (th *thread) reg(off int) uint64 { return binary.LittleEndian.Uint64(th.regs[off:]) }

func (th *thread) setReg(off int, v uint64) {
	binary.LittleEndian.PutUint64(th.regs[off:], v)
	th.regsDirty = true
}

// pc returns the thread's program counter (0 if the registers cannot be read:
// the thread is gone, and its exit event follows).
func (th *thread) pc() uint64 {
	if th.loadRegs() != nil {
		return 0
	}
	return th.reg(offRIP)
}

func (th *thread) sp() uint64 {
	if th.loadRegs() != nil {
		return 0
	}
	return th.reg(offRSP)
}

// rewindPC moves a stopped thread's pc back onto the int3 it trapped on, in
// the cache and in the kernel at once: if sonde dies before the thread runs
// again, the kernel releases it there (it re-executes the int3) rather than
// one byte into the instruction under it. PTRACE_POKEUSER of rip alone: a
// whole PTRACE_SETREGSET here (it rewrites the segment and base registers
// too) made the eventpoint cycle 1.8x slower, the poke costs no more than
// the noise (BENCHMARKS.md). If the poke fails the cache is marked dirty
// and the resume writes it.
func (th *thread) rewindPC(pc uint64) {
	dirty := th.regsDirty
	th.setReg(offRIP, pc)
	if pokeUser(th.tid, offRIP, pc) == nil {
		th.regsDirty = dirty
	}
}

// flushRegs writes changed general registers back before the thread runs.
func (th *thread) flushRegs() error {
	if !th.regsDirty {
		return nil
	}
	if err := setRegSet(th.tid, ntPRStatus, th.regs[:]); err != nil {
		return err
	}
	th.regsDirty = false
	return nil
}

// Registers implements target.Backend: both register sets of a stopped thread,
// from the cache of this stop.
func (b *Backend) Registers(ctx *target.Context) (*target.Registers, error) {
	var r *target.Registers
	err := b.do("read registers", func() error {
		th, err := b.stoppedThread(ctx, "read registers")
		if err != nil {
			return err
		}
		if err := th.loadRegs(); err != nil {
			return b.osError("read registers", th, err)
		}
		r = &target.Registers{Arch: arch.AMD64, General: append([]byte(nil), th.regs[:]...)}
		if th.loadXState() == nil {
			r.XState = toArchXState(th.xstate)
		}
		return nil
	})
	return r, err
}

// SetRegisters implements target.Backend: both sets are written at once, so a
// size or value the kernel refuses is reported to the caller.
func (b *Backend) SetRegisters(ctx *target.Context, r *target.Registers) error {
	return b.do("write registers", func() error {
		th, err := b.stoppedThread(ctx, "write registers")
		if err != nil {
			return err
		}
		if len(r.General) != generalSize {
			return target.Errorf(target.CodeInvalidDataSize, "write registers", ctx.ID(),
				fmt.Errorf("general registers are %d bytes, want %d", len(r.General), generalSize))
		}
		if r.XState != nil {
			if err := th.loadXState(); err != nil {
				return b.osError("write registers", th, err)
			}
			if want := max(arch.XStateSize, len(th.xstate)); len(r.XState) != want {
				return target.Errorf(target.CodeInvalidDataSize, "write registers", ctx.ID(),
					fmt.Errorf("XSAVE area is %d bytes, want %d", len(r.XState), want))
			}
			k := fromArchXState(r.XState, append([]byte(nil), th.xstate...))
			if err := setRegSet(th.tid, ntX86XState, k); err != nil {
				return b.osError("write registers", th, err)
			}
			th.haveX = false // re-read: the kernel may sanitise what it was given
		}
		copy(th.regs[:], r.General)
		th.haveRegs = true
		th.regsDirty = true
		if err := th.flushRegs(); err != nil {
			return b.osError("write registers", th, err)
		}
		th.haveRegs = false
		return nil
	})
}

// stoppedThread returns the backend thread of ctx if it is in a ptrace-stop.
func (b *Backend) stoppedThread(ctx *target.Context, op string) (*thread, error) {
	th, err := b.threadOf(ctx, op)
	if err != nil {
		return nil, err
	}
	if th.running {
		return nil, target.Errorf(target.CodeIsRunning, op, ctx.ID(), nil)
	}
	return th, nil
}
