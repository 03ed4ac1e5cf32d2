package target

import (
	"encoding/binary"
	"fmt"

	"github.com/sondedbg/sonde/arch"
)

// Registers is a snapshot of one thread's registers in the kernel's layouts:
// General is struct user_regs_struct, XState the XSAVE area (nil when the backend
// could not read it). Both are the same bytes ptrace and core files carry, so
// every backend fills them alike.
type Registers struct {
	Arch    *arch.Arch
	General []byte
	XState  []byte
}

// Clone returns a deep copy.
func (r *Registers) Clone() *Registers {
	c := &Registers{Arch: r.Arch, General: append([]byte(nil), r.General...)}
	if r.XState != nil {
		c.XState = append([]byte(nil), r.XState...)
	}
	return c
}

// XCR0 returns the enabled XSAVE state components, or 3 (x87+SSE) for a plain
// FXSAVE image.
func (r *Registers) XCR0() uint64 {
	if len(r.XState) >= arch.XCR0Offset+8 && len(r.XState) > arch.FXSaveSize {
		return binary.LittleEndian.Uint64(r.XState[arch.XCR0Offset:])
	}
	return 3
}

// Has reports whether the snapshot holds reg.
func (r *Registers) Has(reg *arch.Register) bool {
	switch reg.Set {
	case arch.SetGeneral:
		return reg.Offset+reg.Size <= len(r.General)
	case arch.SetXState:
		if reg.Offset+reg.Size > len(r.XState) {
			return false
		}
		return reg.XComponent <= 1 || r.XCR0()&(1<<uint(reg.XComponent)) != 0
	}
	return false
}

func (r *Registers) bytes(reg *arch.Register) ([]byte, error) {
	if !r.Has(reg) {
		return nil, Errorf(CodeUnsupported, "register "+reg.Name, "", fmt.Errorf("not in this register snapshot"))
	}
	if reg.Set == arch.SetGeneral {
		return r.General[reg.Offset : reg.Offset+reg.Size], nil
	}
	return r.XState[reg.Offset : reg.Offset+reg.Size], nil
}

// Get returns a copy of reg's bytes (little-endian).
func (r *Registers) Get(reg *arch.Register) ([]byte, error) {
	b, err := r.bytes(reg)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// Uint64 returns a register of at most 8 bytes as an integer.
func (r *Registers) Uint64(reg *arch.Register) (uint64, error) {
	b, err := r.bytes(reg)
	if err != nil {
		return 0, err
	}
	var buf [8]byte
	copy(buf[:], b)
	return binary.LittleEndian.Uint64(buf[:]), nil
}

// DWARF returns the value of the register with DWARF number n (at most 8 bytes).
func (r *Registers) DWARF(n int) (uint64, error) {
	reg := r.Arch.ByDWARF(n)
	if reg == nil {
		return 0, Errorf(CodeUnsupported, fmt.Sprintf("DWARF register %d", n), "", nil)
	}
	return r.Uint64(reg)
}

// PC returns the program counter.
func (r *Registers) PC() uint64 { v, _ := r.DWARF(r.Arch.PCRegister); return v }

// SP returns the stack pointer.
func (r *Registers) SP() uint64 { v, _ := r.DWARF(r.Arch.SPRegister); return v }

// Set overwrites bytes [offset, offset+len(value)) of reg.
func (r *Registers) Set(reg *arch.Register, offset int, value []byte) error {
	b, err := r.bytes(reg)
	if err != nil {
		return err
	}
	if offset < 0 || offset+len(value) > len(b) {
		return Errorf(CodeInvalidDataSize, "write register "+reg.Name, "",
			fmt.Errorf("bytes %d..%d outside its %d bytes", offset, offset+len(value), len(b)))
	}
	copy(b[offset:], value)
	return nil
}

// SetUint64 sets a register of at most 8 bytes from an integer.
func (r *Registers) SetUint64(reg *arch.Register, v uint64) error {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	return r.Set(reg, 0, buf[:reg.Size])
}
