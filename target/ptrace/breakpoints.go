package ptrace

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

var breakpointInsn = []byte{0xcc}

// ErrNoHardwareSlot is the cause of the error returned when all four debug
// registers of a process are in use.
var ErrNoHardwareSlot = errors.New("all 4 hardware breakpoint/watchpoint slots (DR0-DR3) are in use")

// swBreakpoint is one planted int3: who uses it. Several breakpoints (users,
// and sonde's own internal ones for stepping) can share an address. The byte
// it replaced is in the address space's translate.Shadow.
type swBreakpoint struct {
	users    []*target.Breakpoint
	internal int
}

func (b *Backend) breakpointAt(owner *process, addr uint64) bool {
	owner.memMu.RLock()
	defer owner.memMu.RUnlock()
	return owner.sw[addr] != nil
}

func (b *Backend) hasBreakpoints(owner *process) bool {
	owner.memMu.RLock()
	defer owner.memMu.RUnlock()
	return len(owner.sw) > 0
}

func (b *Backend) userBreakpointsAt(p *process, addr uint64) []*target.Breakpoint {
	owner := p.memOwner
	owner.memMu.RLock()
	defer owner.memMu.RUnlock()
	if e := owner.sw[addr]; e != nil && p == owner {
		return append([]*target.Breakpoint(nil), e.users...)
	}
	return nil
}

// plant adds a reference to the int3 at addr, writing it if it is the first.
// Called with owner.memMu held.
func plant(owner *process, addr uint64) (*swBreakpoint, error) {
	if e := owner.sw[addr]; e != nil {
		return e, nil
	}
	var orig [1]byte
	if n, err := readRaw(owner, addr, orig[:]); n != 1 {
		return nil, memoryError(addr, 0, err)
	}
	if owner.mem == nil {
		return nil, memoryError(addr, 0, unix.ESRCH)
	}
	if _, err := owner.mem.WriteAt(breakpointInsn, int64(addr)); err != nil {
		return nil, memoryError(addr, 0, err)
	}
	e := &swBreakpoint{}
	owner.sw[addr] = e
	owner.shadow.Patch(addr, orig[:], breakpointInsn, "breakpoint")
	delete(owner.removed, addr)
	owner.imagesSetOriginal(addr, orig[0])
	return e, nil
}

// unplantIfUnused restores the original byte once nothing uses the int3.
// Called with owner.memMu held.
func unplantIfUnused(owner *process, addr uint64, e *swBreakpoint) {
	if len(e.users) > 0 || e.internal > 0 {
		return
	}
	orig := owner.shadow.Unpatch(addr, 1)
	if owner.mem != nil {
		owner.mem.WriteAt(orig, int64(addr))
	}
	delete(owner.sw, addr)
	owner.removed[addr] = true
	owner.imagesClearOriginal(addr)
}

func (b *Backend) plantInternal(owner *process, addr uint64) error {
	owner.memMu.Lock()
	defer owner.memMu.Unlock()
	e, err := plant(owner, addr)
	if err != nil {
		return err
	}
	e.internal++
	return nil
}

func (b *Backend) unplantInternal(owner *process, addr uint64) {
	owner.memMu.Lock()
	defer owner.memMu.Unlock()
	if e := owner.sw[addr]; e != nil && e.internal > 0 {
		e.internal--
		unplantIfUnused(owner, addr, e)
	}
}

// InsertBreakpoint implements target.Backend.
func (b *Backend) InsertBreakpoint(bp *target.Breakpoint) error {
	return b.do("set breakpoint", func() error {
		p, err := b.procOf(bp.Process, "set breakpoint")
		if err != nil {
			return err
		}
		if bp.Spec.Kind == target.BreakpointSoftware {
			p.memMu.Lock()
			defer p.memMu.Unlock()
			e, err := plant(p, bp.Spec.Addr)
			if err != nil {
				return target.Errorf(target.CodeInvalidAddress, "set breakpoint", p.ctx.ID(), err)
			}
			e.users = append(e.users, bp)
			return nil
		}
		slot := -1
		for i, h := range p.hw {
			if h == nil {
				slot = i
				break
			}
		}
		if slot < 0 {
			return target.Errorf(target.CodeUnsupported, "set breakpoint", p.ctx.ID(), ErrNoHardwareSlot)
		}
		p.hw[slot] = bp
		p.hwGen++
		if err := b.applyDebugRegsAll(p); err != nil {
			p.hw[slot] = nil
			p.hwGen++
			b.applyDebugRegsAll(p)
			return target.Errorf(target.CodeInvalidAddress, "set breakpoint", p.ctx.ID(), err)
		}
		return nil
	})
}

// RemoveBreakpoint implements target.Backend.
func (b *Backend) RemoveBreakpoint(bp *target.Breakpoint) error {
	return b.do("remove breakpoint", func() error {
		p, err := b.procOf(bp.Process, "remove breakpoint")
		if err != nil {
			return err
		}
		if bp.Spec.Kind == target.BreakpointSoftware {
			p.memMu.Lock()
			defer p.memMu.Unlock()
			e := p.sw[bp.Spec.Addr]
			if e == nil {
				return nil
			}
			for i, u := range e.users {
				if u == bp {
					e.users = append(e.users[:i:i], e.users[i+1:]...)
					break
				}
			}
			unplantIfUnused(p, bp.Spec.Addr, e)
			return nil
		}
		for i, h := range p.hw {
			if h == bp {
				p.hw[i] = nil
				p.hwGen++
			}
		}
		return b.applyDebugRegsAll(p)
	})
}

// dr7 computes the debug control register for a process's slots.
func dr7(hw [4]*target.Breakpoint) uint64 {
	var v uint64
	for i, bp := range hw {
		if bp == nil {
			continue
		}
		v |= 1 << (2 * i) // local enable
		if bp.Spec.Kind == target.Watchpoint {
			rw := uint64(1) // write
			if bp.Spec.Access&target.AccessRead != 0 {
				rw = 3 // read or write: x86 cannot trap reads alone
			}
			var ln uint64
			switch bp.Spec.Size {
			case 2:
				ln = 1
			case 4:
				ln = 3
			case 8:
				ln = 2
			}
			v |= (rw | ln<<2) << (16 + 4*i)
		}
	}
	return v
}

// applyDebugRegs writes the process's slots into one stopped thread.
func (b *Backend) applyDebugRegs(th *thread) error {
	p := th.proc
	// Disable first, so that no half-written combination is ever live.
	if err := pokeUser(th.tid, debugRegOffset+7*8, 0); err != nil {
		return err
	}
	for i, bp := range p.hw {
		if bp != nil {
			if err := pokeUser(th.tid, debugRegOffset+uintptr(i)*8, bp.Spec.Addr); err != nil {
				return err
			}
		}
	}
	if v := dr7(p.hw); v != 0 {
		if err := pokeUser(th.tid, debugRegOffset+7*8, v); err != nil {
			return err
		}
	}
	th.hwGen = p.hwGen
	return nil
}

// applyDebugRegsAll updates every thread of a process: stopped ones now, running
// ones after holding them for a moment (one hop for the whole process).
func (b *Backend) applyDebugRegsAll(p *process) error {
	var first error
	// stopOthers with a stand-in thread holds every running thread of p.
	held := b.stopOthers(&thread{proc: p})
	defer b.resumeOthers(held)
	for _, th := range p.sortedThreads() {
		if th.running || th.newborn {
			continue // newborns get them at their first stop
		}
		if err := b.applyDebugRegs(th); err != nil && !errors.Is(err, unix.ESRCH) && first == nil {
			first = fmt.Errorf("thread %d: %w", th.tid, err)
		}
	}
	return first
}
