package disasm

import "testing"

// FuzzDecode feeds arbitrary bytes to the decoder and formatters: nothing may
// panic, every instruction is 1 to 15 bytes long, a linear sweep covers every
// byte exactly once, and a listing from any address starts at or before it.
func FuzzDecode(f *testing.F) {
	seeds := [][]byte{
		{0xc5, 0xf8, 0x77, 0xc3},                         // vzeroupper; ret
		{0xc4, 0xe1, 0x7c, 0x77},                         // vzeroall (VEX3)
		{0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5}, // endbr64; push; mov
		{0x0f, 0x01, 0xee, 0x0f, 0x01, 0xef},             // rdpkru; wrpkru
		{0x66, 0x4c, 0x0f, 0x38, 0xf6, 0xc9},             // adcx
		{0xc4, 0xe3, 0xf9, 0x6b, 0xc2},                   // FMA4, truncated
		{0x8f, 0xe8, 0x78, 0xc2, 0x04, 0x25},             // XOP, truncated SIB/disp
		{0x9b, 0xdd, 0x3c, 0x24},                         // fwait; fnstsw
		{0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0},
		{0x62, 0xf3, 0x6d, 0x22, 0x3e, 0x0f, 0x04}, // AVX-512 compare
		{0x3e, 0xff, 0xe0, 0xf3, 0xc3, 0xe8},       // notrack jmp; repz ret; truncated call
		{0xde, 0xc9, 0xdb, 0x6c, 0x24, 0x18, 0xd9, 0xe0},
		{0x06, 0x0f, 0x0b, 0xcc},
	}
	for _, s := range seeds {
		f.Add(s, uint64(0x401000), uint16(1))
	}
	f.Fuzz(func(t *testing.T, code []byte, addr uint64, at uint16) {
		if len(code) > 4096 {
			code = code[:4096]
		}
		total := 0
		for _, in := range DecodeAll(code, addr) {
			if in.Len < 1 || in.Len > MaxInstructionLen || len(in.Bytes) != in.Len {
				t.Fatalf("instruction at %#x: length %d, %d bytes", in.Address, in.Len, len(in.Bytes))
			}
			if in.Address != addr+uint64(total) {
				t.Fatalf("instruction at %#x, expected %#x", in.Address, addr+uint64(total))
			}
			total += in.Len
			for _, syn := range []Syntax{GNU, Intel} {
				if in.Text(syn, symbols) == "" || in.Mnemonic(syn) == "" {
					t.Fatalf("% x: empty text in %v syntax", in.Bytes, syn)
				}
				in.Operands(syn)
			}
			in.Flow()
			in.BranchTarget()
			in.MemoryTarget()
			if off, size, ok := in.PCRelative(); ok && (off < 0 || off+size > in.Len) {
				t.Fatalf("% x: PC-relative field %d bytes at %d", in.Bytes, size, off)
			}
		}
		if total != len(code) {
			t.Fatalf("linear sweep covered %d of %d bytes", total, len(code))
		}
		if len(code) > 0 && addr < ^uint64(0)-uint64(len(code)) {
			target := addr + uint64(int(at)%len(code))
			list, err := ListFrom(code, addr, target)
			if err != nil || len(list) == 0 || list[0].Address > target || list[0].Next() <= target {
				t.Fatalf("ListFrom(%#x): %v, first %+v", target, err, list)
			}
		}
	})
}
