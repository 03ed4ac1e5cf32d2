package ptrace

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Emulating the instruction under a breakpoint is how sonde resumes from one
// without a single-step (which costs ~60 µs under virtualisation) and without
// ever lifting the int3 (so other threads cannot run past it). Only
// instructions whose whole effect is on registers and one stack slot are
// emulated — the ones function entries start with, where breakpoints usually
// are. Everything else goes the displaced way in stepOverBreakpoint.

// emulate executes the instruction at th's PC in its registers. It returns false,
// changing nothing, when the instruction is not one it knows.
func (b *Backend) emulate(th *thread) bool {
	if th.loadRegs() != nil {
		return false
	}
	pc := th.reg(offRIP)
	var code [16]byte
	n, _ := b.readMemory(th.proc, pc, code[:])
	c := code[:n]
	length, ok := b.emulateInsn(th, c)
	if !ok {
		return false
	}
	th.setReg(offRIP, pc+uint64(length))
	return true
}

func (b *Backend) emulateInsn(th *thread, c []byte) (int, bool) {
	if len(c) == 0 {
		return 0, false
	}
	switch {
	case c[0] == 0x90: // nop
		return 1, true
	case len(c) >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa: // endbr64
		return 4, true
	case c[0] >= 0x50 && c[0] <= 0x57: // push r64
		return 1, b.push(th, int(c[0]-0x50))
	case len(c) >= 2 && c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57: // push r8-r15
		return 2, b.push(th, 8+int(c[1]-0x50))
	case len(c) >= 3 && c[0]&0xf8 == 0x48 && (c[1] == 0x89 || c[1] == 0x8b) && c[2]>>6 == 3:
		// mov r64, r64 (REX.W 89 /r or 8b /r, register form)
		reg := int(c[2]>>3&7) | int(c[0]>>2&1)<<3
		rm := int(c[2]&7) | int(c[0]&1)<<3
		src, dst := reg, rm
		if c[1] == 0x8b {
			src, dst = rm, reg
		}
		th.setReg(encodingOffset[dst], th.reg(encodingOffset[src]))
		return 3, true
	case len(c) >= 3 && c[0] == 0x66 && c[1] == 0x90: // xchg %ax,%ax
		return 2, true
	case len(c) >= 3 && c[0] == 0x0f && c[1] == 0x1f: // nopl with ModRM
		return nopLength(c[1:], 1)
	case len(c) >= 4 && c[0] == 0x66 && c[1] == 0x0f && c[2] == 0x1f: // nopw
		return nopLength(c[2:], 2)
	}
	return 0, false
}

// nopLength returns the length of a 0f 1f /0 nop whose opcode starts c, plus
// the prefix bytes before it.
func nopLength(c []byte, prefix int) (int, bool) {
	if len(c) < 2 {
		return 0, false
	}
	modrm := c[1]
	if modrm>>3&7 != 0 {
		return 0, false
	}
	n := 2 // 0f-less count: 1f + modrm, plus the 0f
	mod, rm := modrm>>6, modrm&7
	if mod != 3 && rm == 4 {
		n++ // SIB
	}
	switch mod {
	case 0:
		if rm == 5 {
			n += 4
		}
	case 1:
		n++
	case 2:
		n += 4
	}
	total := prefix + n
	if total > len(c)+prefix {
		return 0, false
	}
	return total, true
}

// push emulates "push reg": one 8-byte store below the stack pointer.
func (b *Backend) push(th *thread, reg int) bool {
	v := th.reg(encodingOffset[reg])
	sp := th.reg(offRSP) - 8
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(8)
	remote := []unix.RemoteIovec{{Base: uintptr(sp), Len: 8}}
	if n, err := unix.ProcessVMWritev(th.tid, local, remote, 0); err != nil || n != 8 {
		return false
	}
	th.setReg(offRSP, sp)
	return true
}
