package translate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

const (
	app  = 0x555555555000 // a PIE text address
	near = 0x555555600000 // a scratch page within reach of app
	far  = 0x7ff000000000 // out of rel32 reach of app
)

// absTarget follows the jump Code ends with (or starts with, for a jcc) and
// returns the absolute address it goes to.
func jumpTarget(t *testing.T, code []byte, at uint64) uint64 {
	t.Helper()
	switch {
	case len(code) >= 5 && (code[0] == 0xe9 || code[0] == 0xe8):
		return at + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(code[1:]))))
	case len(code) >= 6 && code[0] == 0x0f && code[1]&0xf0 == 0x80:
		return at + 6 + uint64(int64(int32(binary.LittleEndian.Uint32(code[2:]))))
	case len(code) >= 14 && code[0] == 0xff && code[1] == 0x25 && bytes.Equal(code[2:6], []byte{0, 0, 0, 0}):
		return binary.LittleEndian.Uint64(code[6:])
	}
	t.Fatalf("no jump at the start of % x", code)
	return 0
}

// operandAddr returns the absolute address of the rip-relative operand of
// insn (at pc) using the package's own layout walk, for checking.
func operandAddr(t *testing.T, insn []byte, pc uint64) uint64 {
	t.Helper()
	l, ok := decodeLayout(insn)
	if !ok || !l.ripRelative(insn) {
		t.Fatalf("% x is not rip-relative", insn)
	}
	return pc + uint64(len(insn)) + uint64(int64(int32(binary.LittleEndian.Uint32(insn[l.modrm+1:]))))
}

func TestRelocateRIPRelative(t *testing.T) {
	for _, c := range []struct {
		name string
		insn []byte
	}{
		{"mov rdx,[rip+0x2c61]", []byte{0x48, 0x8b, 0x15, 0x61, 0x2c, 0, 0}},
		{"lea rdi,[rip-0x10]", []byte{0x48, 0x8d, 0x3d, 0xf0, 0xff, 0xff, 0xff}},
		{"cmp dword [rip+8],5 (imm after disp)", []byte{0x83, 0x3d, 8, 0, 0, 0, 5}},
		{"movss xmm0,[rip+0x100]", []byte{0xf3, 0x0f, 0x10, 0x05, 0, 1, 0, 0}},
		{"vmovdqa ymm0,[rip+0x40] (VEX2)", []byte{0xc5, 0xfd, 0x6f, 0x05, 0x40, 0, 0, 0}},
		{"vbroadcastss xmm0,[rip+4] (VEX3)", []byte{0xc4, 0xe2, 0x79, 0x18, 0x05, 4, 0, 0, 0}},
		{"vmovups zmm0,[rip+0x80] (EVEX)", []byte{0x62, 0xf1, 0x7c, 0x48, 0x10, 0x05, 0x80, 0, 0, 0}},
		{"mov r9,[rip+8] (REX.R)", []byte{0x4c, 0x8b, 0x0d, 8, 0, 0, 0}},
		{"lock add [rip+8],eax", []byte{0xf0, 0x01, 0x05, 8, 0, 0, 0}},
		{"push qword [rip+0x20]", []byte{0xff, 0x35, 0x20, 0, 0, 0}},
		{"jmp [rip+0x20] (indirect)", []byte{0xff, 0x25, 0x20, 0, 0, 0}},
		{"cmpxchg16b [rip+0x20]", []byte{0x48, 0x0f, 0xc7, 0x0d, 0x20, 0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := operandAddr(t, c.insn, app)
			for _, mode := range []Mode{Displaced, Inline} {
				r, err := Relocate(append(c.insn, 0x90, 0x90), app, near, mode)
				if err != nil {
					t.Fatal(err)
				}
				if r.Len != len(c.insn) || len(r.Code) != len(c.insn) || r.Next != app+uint64(len(c.insn)) {
					t.Fatalf("len %d code % x next %#x", r.Len, r.Code, r.Next)
				}
				if got := operandAddr(t, r.Code, near); got != want {
					t.Errorf("mode %d: operand %#x, want %#x (code % x)", mode, got, want, r.Code)
				}
				if r.Scratch != NoReg {
					t.Errorf("in reach, yet scratch %v", r.Scratch)
				}
			}
			// Out of reach: Displaced uses a scratch register, Inline refuses.
			if _, err := Relocate(c.insn, app, far, Inline); !errors.Is(err, ErrOutOfReach) {
				t.Errorf("inline out of reach: %v", err)
			}
			r, err := Relocate(c.insn, app, far, Displaced)
			if err != nil {
				t.Fatal(err)
			}
			checkScratch(t, c.insn, r)
		})
	}
}

// checkScratch verifies a gdb-style fixup: same length, the operand now
// [scratch+disp32] with the same displacement, the scratch register unused by
// the instruction, and its value the original rip.
func checkScratch(t *testing.T, insn []byte, r *Relocation) {
	t.Helper()
	if r.Scratch == NoReg || r.Scratch > 7 || r.Scratch == 4 || r.Scratch == 5 || r.Scratch < 3 {
		t.Fatalf("scratch %v", r.Scratch)
	}
	if len(r.Code) != len(insn) || r.ScratchValue != r.Next {
		t.Fatalf("code % x value %#x next %#x", r.Code, r.ScratchValue, r.Next)
	}
	l, _ := decodeLayout(r.Code)
	m := r.Code[l.modrm]
	if m>>6 != 2 || Reg(m&7) != r.Scratch || m>>3&7 != insn[l.modrm]>>3&7 {
		t.Fatalf("modrm %#x for scratch %v", m, r.Scratch)
	}
	if !bytes.Equal(r.Code[l.modrm+1:l.modrm+5], insn[l.modrm+1:l.modrm+5]) {
		t.Fatalf("displacement changed: % x", r.Code)
	}
	inst, err := x86asm.Decode(r.Code, 64)
	if err == nil {
		for _, a := range inst.Args {
			if m, ok := a.(x86asm.Mem); ok && m.Base != 0 && gpr(m.Base) != r.Scratch {
				t.Errorf("x86asm sees base %v, want %v", m.Base, r.Scratch)
			}
		}
		for _, a := range inst.Args {
			if g, ok := a.(x86asm.Reg); ok && gpr(g) == r.Scratch {
				t.Errorf("scratch %v is an operand of %v", r.Scratch, inst)
			}
		}
	}
}

func TestRelocateScratchAvoidsOperands(t *testing.T) {
	// mov rsi,[rip+x]: rsi is the destination, so scratch is rdi.
	r, err := Relocate([]byte{0x48, 0x8b, 0x35, 8, 0, 0, 0}, app, far, Displaced)
	if err != nil || r.Scratch != 7 {
		t.Fatalf("%v %v", r, err)
	}
	// andn rsi, rdi, [rip+x] (VEX vvvv=rdi, reg=rsi): scratch is rbx.
	r, err = Relocate([]byte{0xc4, 0xe2, 0xc0, 0xf2, 0x35, 8, 0, 0, 0}, app, far, Displaced)
	if err != nil {
		t.Fatal(err)
	}
	if r.Scratch != 3 {
		t.Fatalf("scratch %v, want rbx", r.Scratch)
	}
	// mov r14,[rip+x] with REX.B set: REX.B is cleared; rsi shares r14's low
	// bits in ModRM.reg and is avoided too, so scratch is rdi.
	r, err = Relocate([]byte{0x4d, 0x8b, 0x35, 8, 0, 0, 0}, app, far, Displaced)
	if err != nil || r.Scratch != 7 || r.Code[0]&1 != 0 {
		t.Fatalf("% x %v %v", r.Code, r.Scratch, err)
	}
	checkScratch(t, []byte{0x4d, 0x8b, 0x35, 8, 0, 0, 0}, r)
}

func TestRelocateBranches(t *testing.T) {
	for _, c := range []struct {
		name   string
		insn   []byte
		kind   Kind
		target int64 // relative to app
	}{
		{"jmp rel8", []byte{0xeb, 0x10}, KindJump, 2 + 0x10},
		{"jmp rel32 back", []byte{0xe9, 0x00, 0xff, 0xff, 0xff}, KindJump, 5 - 0x100},
		{"je rel8", []byte{0x74, 0x05}, KindCondJump, 7},
		{"jg rel32", []byte{0x0f, 0x8f, 0x00, 0x01, 0, 0}, KindCondJump, 6 + 0x100},
		{"bnd jne rel8", []byte{0xf2, 0x75, 0x05}, KindCondJump, 8},
		{"call rel32", []byte{0xe8, 0x20, 0, 0, 0}, KindCall, 5 + 0x20},
		{"bnd call rel32", []byte{0xf2, 0xe8, 0x20, 0, 0, 0}, KindCall, 6 + 0x20},
		{"loop", []byte{0xe2, 0xfe}, KindCondJump, 0},
		{"jrcxz", []byte{0xe3, 0x08}, KindCondJump, 10},
		{"jecxz", []byte{0x67, 0xe3, 0x08}, KindCondJump, 11},
	} {
		for _, dest := range []uint64{near, far} {
			for _, mode := range []Mode{Displaced, Inline} {
				r, err := Relocate(c.insn, app, dest, mode)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if r.Kind != c.kind || r.Target != app+uint64(c.target) || r.Next != app+uint64(len(c.insn)) {
					t.Fatalf("%s: kind %v target %#x next %#x", c.name, r.Kind, r.Target, r.Next)
				}
				checkBranchCode(t, c.name, r)
			}
		}
	}
}

// checkBranchCode follows the generated code's taken path and checks it
// reaches Target, and that its fall-through is the end of Code.
func checkBranchCode(t *testing.T, name string, r *Relocation) {
	t.Helper()
	code, at := r.Code, r.Dest
	switch {
	case r.Kind == KindCall && r.Mode == Inline:
		// push imm32 [; mov dword [rsp+4], imm32] ; jmp
		if code[0] != 0x68 {
			t.Fatalf("%s: % x", name, code)
		}
		ret := uint64(int64(int32(binary.LittleEndian.Uint32(code[1:]))))
		n := 5
		if code[5] == 0xc7 {
			ret = ret&0xffffffff | uint64(binary.LittleEndian.Uint32(code[9:]))<<32
			n = 13
		}
		if ret != r.Next {
			t.Errorf("%s: pushes %#x, want %#x", name, ret, r.Next)
		}
		if got := jumpTarget(t, code[n:], at+uint64(n)); got != r.Target {
			t.Errorf("%s: jumps to %#x", name, got)
		}
		if app, adj, _ := r.AppPCAt(at + uint64(n)); app != r.AppPC || adj != 8 {
			t.Errorf("%s: after the push: %#x adj %d", name, app, adj)
		}
		return
	case r.Kind == KindCall:
		if !r.FixReturn {
			t.Errorf("%s: displaced call without FixReturn", name)
		}
		if code[0] == 0xff && code[1] == 0x15 {
			if got := binary.LittleEndian.Uint64(code[8:]); got != r.Target {
				t.Errorf("%s: absolute call to %#x", name, got)
			}
			return
		}
	case r.Op == x86asm.LOOP || r.Op == x86asm.LOOPE || r.Op == x86asm.LOOPNE || r.Op == x86asm.JRCXZ || r.Op == x86asm.JECXZ:
		lead := 0
		if code[0] == 0x67 {
			lead = 1
		}
		if code[lead+1] != 2 || code[lead+2] != 0xeb || int(code[lead+3]) != len(code)-lead-4 {
			t.Fatalf("%s: % x", name, code)
		}
		code, at = code[lead+4:], at+uint64(lead+4)
	case code[0]&0xf0 == 0x70: // inverse jcc over an absolute jump
		if int(code[1]) != len(code)-2 {
			t.Fatalf("%s: % x", name, code)
		}
		code, at = code[2:], at+2
	}
	if got := jumpTarget(t, code, at); got != r.Target {
		t.Errorf("%s (dest %#x): goes to %#x, want %#x (code % x)", name, r.Dest, got, r.Target, r.Code)
	}
}

func TestRelocateIndirectCall(t *testing.T) {
	// call [rip+0x100]: Displaced copies (re-biased) and fixes the return;
	// Inline pushes the application's return address and jumps.
	insn := []byte{0xff, 0x15, 0, 1, 0, 0}
	want := operandAddr(t, insn, app)
	r, err := Relocate(insn, app, near, Displaced)
	if err != nil || !r.FixReturn || r.Kind != KindIndirectCall || operandAddr(t, r.Code, near) != want {
		t.Fatalf("displaced: %+v %v", r, err)
	}
	r, err = Relocate(insn, app, near, Inline)
	if err != nil {
		t.Fatal(err)
	}
	n := len(r.Code) - len(insn)
	if r.Code[n] != 0xff || r.Code[n+1] != 0x25 || operandAddr(t, r.Code[n:], near+uint64(n)) != want {
		t.Fatalf("inline: % x", r.Code)
	}
	// call rax inline: push; jmp rax.
	r, err = Relocate([]byte{0xff, 0xd0}, app, near, Inline)
	if err != nil || !bytes.Equal(r.Code[len(r.Code)-2:], []byte{0xff, 0xe0}) {
		t.Fatalf("call rax: % x %v", r.Code, err)
	}
	// call [rsp+8] inline would read past the push: refused.
	if _, err := Relocate([]byte{0xff, 0x54, 0x24, 0x08}, app, near, Inline); !errors.Is(err, ErrUnrelocatable) {
		t.Fatalf("call [rsp+8]: %v", err)
	}
}

func TestRelocatePlainAndSystem(t *testing.T) {
	for _, c := range []struct {
		insn []byte
		kind Kind
	}{
		{[]byte{0x48, 0x89, 0xe5}, KindPlain},                // mov rbp,rsp
		{[]byte{0xff, 0x74, 0x24, 0x08}, KindPlain},          // push [rsp+8]
		{[]byte{0x8f, 0x44, 0x24, 0x08}, KindPlain},          // pop [rsp+8]
		{[]byte{0xf3, 0xa4}, KindPlain},                      // rep movsb
		{[]byte{0xc3}, KindIndirect},                         // ret
		{[]byte{0xff, 0xe0}, KindIndirect},                   // jmp rax
		{[]byte{0x0f, 0x05}, KindSystem},                     // syscall
		{[]byte{0xcc}, KindSystem},                           // int3
		{[]byte{0x8b, 0x04, 0x25, 0, 0x10, 0, 0}, KindPlain}, // mov eax,[0x1000] (SIB, no base: absolute)
		// CET (Debian's libstdc++ starts __cxa_throw with it): x86asm reads
		// a lone rep prefix, the sonde trial's probe fell back to an int3.
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa}, KindPlain}, // endbr64
		{[]byte{0xf3, 0x0f, 0x1e, 0xfb}, KindPlain}, // endbr32
	} {
		// (Followed by other bytes, as in a function.)
		r, err := Relocate(append(append([]byte(nil), c.insn...), 0x55, 0x48, 0x89, 0xe5), app, far, Displaced)
		if err != nil {
			t.Fatalf("% x: %v", c.insn, err)
		}
		if r.Kind != c.kind || !bytes.Equal(r.Code, c.insn) || r.Len != len(c.insn) || r.Next != app+uint64(len(c.insn)) || r.Scratch != NoReg || r.FixReturn {
			t.Errorf("% x: %+v", c.insn, r)
		}
		if a, _, _ := r.AppPCAt(far); a != app {
			t.Errorf("AppPCAt(dest) = %#x", a)
		}
		if a, _, _ := r.AppPCAt(far + uint64(len(r.Code))); a != r.Next {
			t.Errorf("AppPCAt(end) = %#x", a)
		}
		if _, _, ok := r.AppPCAt(far + uint64(len(r.Code)) + 1); ok {
			t.Errorf("AppPCAt past the end translated")
		}
	}
}

func TestRelocateRefuses(t *testing.T) {
	for _, c := range []struct {
		insn []byte
		want error
	}{
		{nil, ErrDecode},
		{[]byte{0x48}, ErrDecode},
		{[]byte{0x48, 0x8b}, ErrDecode},
		{[]byte{0x67, 0x8b, 0x05, 0, 0, 0, 0}, ErrUnrelocatable}, // mov eax,[eip+0]
		{[]byte{0x66, 0xe9, 0x10, 0x00}, ErrDecode},              // jmp rel16 (x86asm refuses it)
		{[]byte{0xc7, 0xf8, 0, 0, 0, 0}, ErrUnrelocatable},       // xbegin
		{[]byte{0x67, 0xe2, 0x05}, ErrUnrelocatable},             // loop on ecx
	} {
		_, err := Relocate(c.insn, app, near, Displaced)
		var re *RelocError
		if !errors.Is(err, c.want) || !errors.As(err, &re) || re.AppPC != app {
			t.Errorf("% x: %v, want %v", c.insn, err, c.want)
		}
	}
}

func TestBranchEmulation(t *testing.T) {
	const zf, cf, sf, of = flagZF, flagCF, flagSF, flagOF
	for _, c := range []struct {
		insn  []byte
		flags uint64
		rcx   uint64
		taken bool
		rcxO  uint64
	}{
		{[]byte{0x74, 5}, zf, 0, true, 0},                 // je
		{[]byte{0x74, 5}, 0, 0, false, 0},                 // je
		{[]byte{0x75, 5}, zf, 0, false, 0},                // jne
		{[]byte{0x72, 5}, cf, 0, true, 0},                 // jb
		{[]byte{0x77, 5}, cf, 0, false, 0},                // ja
		{[]byte{0x77, 5}, 0, 0, true, 0},                  // ja
		{[]byte{0x7c, 5}, sf, 0, true, 0},                 // jl
		{[]byte{0x7c, 5}, sf | of, 0, false, 0},           // jl
		{[]byte{0x7f, 5}, 0, 0, true, 0},                  // jg
		{[]byte{0x7e, 5}, zf, 0, true, 0},                 // jle
		{[]byte{0x0f, 0x8d, 5, 0, 0, 0}, of, 0, false, 0}, // jge
		{[]byte{0xe2, 5}, 0, 2, true, 1},                  // loop
		{[]byte{0xe2, 5}, 0, 1, false, 0},                 // loop
		{[]byte{0xe1, 5}, 0, 2, false, 1},                 // loope, ZF clear
		{[]byte{0xe0, 5}, 0, 2, true, 1},                  // loopne
		{[]byte{0xe3, 5}, 0, 0, true, 0},                  // jrcxz
		{[]byte{0xe3, 5}, 0, 1 << 32, false, 1 << 32},
		{[]byte{0x67, 0xe3, 5}, 0, 1 << 32, true, 1 << 32}, // jecxz
	} {
		r, err := Relocate(c.insn, app, near, Displaced)
		if err != nil {
			t.Fatal(err)
		}
		pc, rcx, push, ok := r.Branch(c.flags, c.rcx)
		want := r.Next
		if c.taken {
			want = r.Target
		}
		if !ok || push || pc != want || rcx != c.rcxO {
			t.Errorf("% x flags %#x rcx %d: pc %#x rcx %d (want taken=%v)", c.insn, c.flags, c.rcx, pc, rcx, c.taken)
		}
	}
	r, _ := Relocate([]byte{0xe8, 0x20, 0, 0, 0}, app, near, Displaced)
	if pc, _, push, ok := r.Branch(0, 0); !ok || !push || pc != app+0x25 {
		t.Errorf("call: %#x %v %v", pc, push, ok)
	}
	r, _ = Relocate([]byte{0x90}, app, near, Displaced)
	if _, _, _, ok := r.Branch(0, 0); ok {
		t.Errorf("nop emulated as a branch")
	}
}

// FuzzRelocate: any bytes, any addresses: no panic, and whatever is produced
// keeps the instruction's meaning where it can be checked mechanically.
func FuzzRelocate(f *testing.F) {
	for _, s := range [][]byte{
		{0x48, 0x8b, 0x15, 0x61, 0x2c, 0, 0}, {0xe8, 0x20, 0, 0, 0}, {0x74, 0x05}, {0xe2, 0xfe},
		{0xc5, 0xfd, 0x6f, 0x05, 0x40, 0, 0, 0}, {0x62, 0xf1, 0x7c, 0x48, 0x10, 0x05, 0x80, 0, 0, 0},
		{0xff, 0x15, 0, 1, 0, 0}, {0x0f, 0x05}, {0x67, 0xe3, 8},
	} {
		f.Add(s, uint64(app), uint64(near), false)
		f.Add(s, uint64(app), uint64(far), true)
	}
	f.Fuzz(func(t *testing.T, code []byte, appPC, dest uint64, inline bool) {
		mode := Displaced
		if inline {
			mode = Inline
		}
		r, err := Relocate(code, appPC, dest, mode)
		if err != nil {
			var re *RelocError
			if !errors.As(err, &re) || re.AppPC != appPC {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if r.Len <= 0 || r.Len > MaxInsnLen || r.Len > len(code) || len(r.Code) == 0 || r.Next != appPC+uint64(r.Len) {
			t.Fatalf("bad relocation %+v", r)
		}
		if a, _, ok := r.AppPCAt(dest); !ok || a != appPC {
			t.Fatalf("AppPCAt(dest) = %#x %v", a, ok)
		}
		if a, _, ok := r.AppPCAt(dest + uint64(len(r.Code))); !ok || a != r.Next {
			t.Fatalf("AppPCAt(end) = %#x %v", a, ok)
		}
		insn := code[:r.Len]
		switch r.Kind {
		case KindRIPRelative, KindIndirect, KindPlain, KindSystem:
			l, _ := decodeLayout(insn)
			if !l.ripRelative(insn) {
				if !bytes.Equal(r.Code, insn) {
					t.Fatalf("plain instruction changed: % x -> % x", insn, r.Code)
				}
				return
			}
			if len(r.Code) != len(insn) {
				t.Fatalf("length changed: % x -> % x", insn, r.Code)
			}
			// For legacy encodings x86asm is an independent opinion: it must
			// see the same rip-relative operand the layout walk found.
			if inst, err := x86asm.Decode(insn, 64); err == nil && l.vex == 0 && !hasRIPMem(inst) {
				t.Fatalf("layout finds rip+disp32 in % x, x86asm decodes %v", insn, inst)
			}
			if r.Scratch != NoReg {
				checkScratch(t, insn, r)
				return
			}
			if operandAddr(t, r.Code, dest) != operandAddr(t, insn, appPC) {
				t.Fatalf("operand moved: % x -> % x", insn, r.Code)
			}
		case KindJump, KindCondJump, KindCall:
			checkBranchCode(t, "fuzz", r)
		}
	})
}
