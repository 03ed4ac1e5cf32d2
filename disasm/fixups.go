package disasm

import (
	"bytes"

	"golang.org/x/arch/x86/x86asm"
)

// This file holds the guards against x86asm's gaps. Each one was found by
// comparing x86asm with objdump over whole programs and libc (objdump_test.go
// keeps checking them): an instruction x86asm mis-sizes would desynchronise every
// instruction after it in a linear sweep, and an unknown one would show as bytes.

// namedInsn is a fixed-encoding instruction x86asm does not decode (or
// decodes wrongly), recognised by its bytes before x86asm sees them.
type namedInsn struct {
	bytes []byte
	name  string // same in GNU and Intel syntax; no operands are shown
	flow  Flow   // control-flow class, for IsCall/IsJump/IsReturn
}

// namedInsns are matched exactly (no extra prefixes): compilers emit them bare.
var namedInsns = []namedInsn{
	// CET: x86asm decodes F3 0F 1E FA as a lone one-byte "rep", and the rest as a
	// different instruction.
	{bytes: []byte{0xf3, 0x0f, 0x1e, 0xfa}, name: "endbr64"},
	{bytes: []byte{0xf3, 0x0f, 0x1e, 0xfb}, name: "endbr32"},
	// Memory protection keys: unknown to x86asm (glibc's pkey_get/pkey_set).
	{bytes: []byte{0x0f, 0x01, 0xee}, name: "rdpkru"},
	{bytes: []byte{0x0f, 0x01, 0xef}, name: "wrpkru"},
	// AMD 3DNow! exit: unknown to x86asm.
	{bytes: []byte{0x0f, 0x0e}, name: "femms"},
	// VIA PadLock (libgcrypt): unknown to x86asm; objdump's names.
	{bytes: []byte{0x0f, 0xa7, 0xc0}, name: "xstore-rng"},
	{bytes: []byte{0xf3, 0x0f, 0xa7, 0xc0}, name: "repz xstore-rng"},
	{bytes: []byte{0xf3, 0x0f, 0xa7, 0xc8}, name: "repz xcrypt-ecb"},
	{bytes: []byte{0xf3, 0x0f, 0xa7, 0xd0}, name: "repz xcrypt-cbc"},
	{bytes: []byte{0xf3, 0x0f, 0xa7, 0xd8}, name: "repz xcrypt-ctr"},
	{bytes: []byte{0xf3, 0x0f, 0xa7, 0xe0}, name: "repz xcrypt-cfb"},
	{bytes: []byte{0xf3, 0x0f, 0xa7, 0xe8}, name: "repz xcrypt-ofb"},
	{bytes: []byte{0xf3, 0x0f, 0xa6, 0xc0}, name: "repz montmul"},
	{bytes: []byte{0xf3, 0x0f, 0xa6, 0xc8}, name: "repz xsha1"},
	{bytes: []byte{0xf3, 0x0f, 0xa6, 0xd0}, name: "repz xsha256"},
}

// The two VEX-encoded instructions without ModRM: VEX.0F 77 is vzeroupper
// (VEX.L=0) or vzeroall (VEX.L=1). x86asm consumes a ModRM byte (and whatever
// SIB/displacement that implies) after the opcode, so they come out 4 to 9 bytes
// long, or "truncated" at the end of a buffer, instead of 3 (C5 form) or 4 (C4
// form); every instruction after them in a linear sweep would be wrong.
var (
	vzeroupper = namedInsn{name: "vzeroupper"}
	vzeroall   = namedInsn{name: "vzeroall"}
)

// matchNamed returns the named instruction code starts with and its length,
// or nil.
func matchNamed(code []byte) (*namedInsn, int) {
	if len(code) < 2 {
		return nil, 0
	}
	switch code[0] {
	case 0xc5: // 2-byte VEX: C5 [R vvvv L pp] opcode (map 0F implied)
		if len(code) >= 3 && code[1]&0x03 == 0 && code[2] == 0x77 {
			return vzeroKind(code[1]), 3
		}
		return nil, 0
	case 0xc4: // 3-byte VEX: C4 [RXB mmmmm] [W vvvv L pp] opcode
		if len(code) >= 4 && code[1]&0x1f == 1 && code[2]&0x03 == 0 && code[3] == 0x77 {
			return vzeroKind(code[2]), 4
		}
		return nil, 0
	case 0x0f, 0xf3:
		for i := range namedInsns {
			if bytes.HasPrefix(code, namedInsns[i].bytes) {
				return &namedInsns[i], len(namedInsns[i].bytes)
			}
		}
	}
	return nil, 0
}

func vzeroKind(vexPayload byte) *namedInsn {
	if vexPayload&0x04 != 0 { // VEX.L
		return &vzeroall
	}
	return &vzeroupper
}

// fixup corrects a successful x86asm decoding of code in place, or rejects it.
func fixup(inst *x86asm.Inst, code []byte) error {
	if inst.Op == 0 {
		// x86asm returns a prefix followed by an unknown opcode as a one-byte
		// instruction made of the prefix alone ("data16", "rep"); objdump and
		// the CPU see no such instruction.
		return x86asm.ErrUnrecognized
	}
	for i, a := range inst.Args {
		m, ok := a.(x86asm.Mem)
		if !ok {
			continue
		}
		enc := addressing(code[:inst.Len])
		if !enc.ok {
			break // moffs: a full 64-bit absolute address
		}
		// x86asm keeps a disp32 zero-extended (0xffffff78 for -0x88); the CPU
		// sign-extends it.
		changed := false
		if d := int64(int32(m.Disp)); d != m.Disp {
			m.Disp, changed = d, true
		}
		// In its AVX decoder x86asm drops the RIP base of a RIP-relative operand
		// (ModRM mod=00 rm=101, no SIB), turning `0x4d429(%rip)` into the
		// absolute address 0x4d429.
		if enc.mod == 0 && enc.rm == 5 && m.Base == 0 && m.Index == 0 && inst.AddrSize != 32 {
			m.Base, changed = x86asm.RIP, true
		}
		if changed {
			inst.Args[i] = m // (storing a Mem in the interface allocates: only when needed)
		}
	}
	return nil
}

// legacyPrefixLen counts the legacy prefix bytes (segment, size, lock, rep) at
// the start of code.
func legacyPrefixLen(code []byte) int {
	n := 0
	for n < len(code) && n < MaxInstructionLen {
		switch code[n] {
		case 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3:
			n++
		default:
			return n
		}
	}
	return n
}
