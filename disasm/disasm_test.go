package disasm

import (
	"errors"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// decodeCase is one instruction with the text objdump 2.40 prints for it
// (targets with a 0x prefix, as documented on Text).
type decodeCase struct {
	name  string
	addr  uint64
	bytes []byte
	gnu   string
	intel string
}

func hex(b ...byte) []byte { return b }

// TestDecoderGaps covers each guard against an x86asm gap; the expected
// texts are objdump's.
func TestDecoderGaps(t *testing.T) {
	cases := []decodeCase{
		{"vzeroupper VEX2", 0x1000, hex(0xc5, 0xf8, 0x77), "vzeroupper", "vzeroupper"},
		{"vzeroall VEX2", 0x1000, hex(0xc5, 0xfc, 0x77), "vzeroall", "vzeroall"},
		{"vzeroupper VEX3", 0x1000, hex(0xc4, 0xe1, 0x78, 0x77), "vzeroupper", "vzeroupper"},
		{"vzeroall VEX3", 0x1000, hex(0xc4, 0xe1, 0x7c, 0x77), "vzeroall", "vzeroall"},
		{"endbr64", 0x1000, hex(0xf3, 0x0f, 0x1e, 0xfa), "endbr64", "endbr64"},
		{"endbr32", 0x1000, hex(0xf3, 0x0f, 0x1e, 0xfb), "endbr32", "endbr32"},
		{"rdpkru", 0x1000, hex(0x0f, 0x01, 0xee), "rdpkru", "rdpkru"},
		{"wrpkru", 0x1000, hex(0x0f, 0x01, 0xef), "wrpkru", "wrpkru"},
		{"adcx", 0x1000, hex(0x66, 0x4c, 0x0f, 0x38, 0xf6, 0xc9), "adcx   %rcx,%r9", "adcx   r9,rcx"},
		{"adox", 0x1000, hex(0xf3, 0x4d, 0x0f, 0x38, 0xf6, 0xc0), "adox   %r8,%r8", "adox   r8,r8"},
		{"FMA4 W=1", 0x1000, hex(0xc4, 0xe3, 0xf9, 0x6b, 0xc2, 0x10), "vfmaddsd %xmm2,%xmm1,%xmm0,%xmm0", "vfmaddsd xmm0,xmm0,xmm1,xmm2"},
		{"XOP vprotd", 0x1000, hex(0x8f, 0xe8, 0x78, 0xc2, 0xec, 0x0e), "vprotd $0xe,%xmm4,%xmm5", "vprotd xmm5,xmm4,0xe"},
		{"fwait+fnstsw", 0x1000, hex(0x9b, 0xdf, 0xe0), "fstsw  %ax", "fstsw  ax"},
		{"sal alias", 0x1000, hex(0xc1, 0x77, 0xb6, 0xb6), "shll   $0xb6,-0x4a(%rdi)", "shl    DWORD PTR [rdi-0x4a],0xb6"},
		{"hint nop", 0x1000, hex(0x0f, 0x1e, 0xef), "nop    %edi", "nop    edi"},
		{"disp32 sign", 0x1000, hex(0x8b, 0x85, 0x78, 0xff, 0xff, 0xff), "mov    -0x88(%rbp),%eax", "mov    eax,DWORD PTR [rbp-0x88]"},
		{"SIB no index", 0x1000, hex(0x49, 0x8b, 0xbc, 0x24, 0x88, 0, 0, 0), "mov    0x88(%r12),%rdi", "mov    rdi,QWORD PTR [r12+0x88]"},
		{"absolute 0", 0x1000, hex(0x8b, 0x04, 0x25, 0, 0, 0, 0), "mov    0x0,%eax", "mov    eax,DWORD PTR ds:0x0"},
		{"VEX rip", 0x15448f, hex(0xc5, 0x7d, 0x6f, 0x15, 0x29, 0xd4, 0x04, 0x00),
			"vmovdqa 0x4d429(%rip),%ymm10        # 0x1a18c0", "vmovdqa ymm10,YMMWORD PTR [rip+0x4d429]        # 0x1a18c0"},
		{"movslq", 0x1000, hex(0x48, 0x63, 0x04, 0x82), "movslq (%rdx,%rax,4),%rax", "movsxd rax,DWORD PTR [rdx+rax*4]"},
		{"padding nop", 0x1000, hex(0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0), "data16 cs nopw 0x0(%rax,%rax,1)", "data16 cs nop WORD PTR [rax+rax*1+0x0]"},
		{"xchg ax", 0x1000, hex(0x66, 0x90), "xchg   %ax,%ax", "xchg   ax,ax"},
		{"movabs", 0x1000, hex(0x49, 0xbb, 0xf8, 0xbf, 0xff, 0xff, 0xff, 0xff, 0xf7, 0xff), "movabs $0xfff7ffffffffbff8,%r11", "movabs r11,0xfff7ffffffffbff8"},
		{"imm width", 0x1000, hex(0x83, 0xf8, 0xff), "cmp    $0xffffffff,%eax", "cmp    eax,0xffffffff"},
		{"notrack", 0x1000, hex(0x3e, 0xff, 0xe0), "notrack jmp *%rax", "notrack jmp rax"},
		{"repz ret", 0x1000, hex(0xf3, 0xc3), "repz ret", "repz ret"},
		{"rep stos", 0x1000, hex(0xf3, 0x48, 0xab), "rep stos %rax,%es:(%rdi)", "rep stos QWORD PTR es:[rdi],rax"},
		{"AVX-512 compare", 0x1000, hex(0x62, 0xf3, 0x6d, 0x22, 0x3e, 0x0f, 0x04), "vpcmpnequb (%rdi),%ymm18,%k1{%k2}", "vpcmpnequb k1{k2},ymm18,YMMWORD PTR [rdi]"},
		{"fs canary", 0x1000, hex(0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0), "mov    %fs:0x28,%rax", "mov    rax,QWORD PTR fs:0x28"},
		{"x87 st(i)", 0x1000, hex(0xde, 0xc9), "fmulp  %st,%st(1)", "fmulp  st(1),st"},
		{"rdseed", 0x1000, hex(0x0f, 0xc7, 0xfa), "rdseed %edx", "rdseed edx"},
		{"rdseed r9d", 0x1000, hex(0x41, 0x0f, 0xc7, 0xf9), "rdseed %r9d", "rdseed r9d"},
		{"rdseed ax", 0x1000, hex(0x66, 0x0f, 0xc7, 0xf8), "rdseed %ax", "rdseed ax"},
		{"rdrand REX.W", 0x1000, hex(0x48, 0x0f, 0xc7, 0xf0), "rdrand %rax", "rdrand rax"},
		{"rdpid", 0x1000, hex(0xf3, 0x0f, 0xc7, 0xf8), "rdpid  %rax", "rdpid  rax"},
		{"TLS call padding", 0xf, hex(0x66, 0x66, 0x48, 0xe8, 0, 0, 0, 0), "data16 data16 rex.W call 0x17", "data16 data16 rex.W call 0x17"},
		{"push imm32", 0x1000, hex(0x68, 0xde, 0xfa, 0x27, 0xe5), "push   $0xffffffffe527fade", "push   0xffffffffe527fade"},
		{"push imm8", 0x1000, hex(0x6a, 0xcb), "push   $0xffffffffffffffcb", "push   0xffffffffffffffcb"},
		{"broadcast", 0x1000, hex(0x62, 0xd2, 0x6d, 0x18, 0x52, 0x41, 0x03), "vpdpwssd 0xc(%r9){1to4},%xmm2,%xmm0", "vpdpwssd xmm0,xmm2,DWORD BCST [r9+0xc]"},
		{"vpmovm2d", 0x1000, hex(0x62, 0xe2, 0x7e, 0x48, 0x38, 0xfd), "vpmovm2d %k5,%zmm23", "vpmovm2d zmm23,k5"},
		{"mmx", 0x1000, hex(0x0f, 0x76, 0xd2), "pcmpeqd %mm2,%mm2", "pcmpeqd mm2,mm2"},
		{"PadLock", 0x1000, hex(0xf3, 0x0f, 0xa7, 0xc8), "repz xcrypt-ecb", "repz xcrypt-ecb"},
		{"retf imm", 0x1000, hex(0xca, 0x00, 0x4d), "lret   $0x4d00", "retf   0x4d00"},
		{"jcc", 0x263d2, hex(0x74, 0x1e), "je     0x263f2", "je     0x263f2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Trailing bytes must not be consumed (vzeroupper's bug).
			buf := append(append([]byte(nil), c.bytes...), 0x90, 0x90, 0x90, 0x90, 0x90, 0x90)
			in, err := Decode(buf, c.addr)
			if err != nil {
				t.Fatalf("Decode(% x): %v", c.bytes, err)
			}
			if in.Len != len(c.bytes) {
				t.Errorf("Decode(% x): length %d, want %d", c.bytes, in.Len, len(c.bytes))
			}
			if got := in.Text(GNU, nil); got != c.gnu {
				t.Errorf("GNU text of % x = %q, want %q", c.bytes, got, c.gnu)
			}
			if got := in.Text(Intel, nil); got != c.intel {
				t.Errorf("Intel text of % x = %q, want %q", c.bytes, got, c.intel)
			}
			if list := DecodeAll(buf, c.addr); len(list) != 7 || list[1].Address != c.addr+uint64(len(c.bytes)) {
				t.Errorf("DecodeAll desynchronised after % x: %d instructions", c.bytes, len(list))
			}
		})
	}
}

// TestVzeroupperBeforeReturn is the sequence gcc emits at the end of AVX
// functions: vzeroupper; ret. x86asm alone swallows the ret into vzeroupper.
func TestVzeroupperBeforeReturn(t *testing.T) {
	if inst, err := x86asm.Decode([]byte{0xc5, 0xf8, 0x77, 0xc3, 0x90, 0x90}, 64); err == nil && inst.Len == 3 {
		t.Logf("x86asm now sizes vzeroupper correctly; the guard in fixups.go can go")
	}
	list := DecodeAll([]byte{0xc5, 0xf8, 0x77, 0xc3}, 0x2000)
	if len(list) != 2 || list[0].Mnemonic(GNU) != "vzeroupper" || !list[1].IsReturn() || list[1].Address != 0x2003 {
		t.Fatalf("vzeroupper; ret decoded as %v", texts(list))
	}
}

func texts(list []Instruction) []string {
	var out []string
	for i := range list {
		out = append(out, list[i].Text(GNU, nil))
	}
	return out
}

func TestUndecodable(t *testing.T) {
	// 0x06 (push %es) does not exist in 64-bit mode.
	in, err := Decode([]byte{0x06, 0x90}, 0x400000)
	var de *DecodeError
	if !errors.As(err, &de) || de.Address != 0x400000 || !errors.Is(err, x86asm.ErrUnrecognized) {
		t.Fatalf("Decode(06): error %v, want a DecodeError at 0x400000 wrapping ErrUnrecognized", err)
	}
	if in.Kind != Bad || in.Len != 1 || in.Text(GNU, nil) != ".byte  0x6" || in.Text(Intel, nil) != ".byte  0x6" {
		t.Errorf("Decode(06) = kind %v len %d %q", in.Kind, in.Len, in.Text(GNU, nil))
	}
	// A call cut short by the end of the buffer.
	in, err = Decode([]byte{0xe8, 0x00, 0x00}, 0x1000)
	if err == nil || in.Kind != Bad || in.Len != 1 {
		t.Errorf("truncated call: kind %v len %d err %v", in.Kind, in.Len, err)
	}
	if _, err := Decode(nil, 0); !errors.Is(err, ErrEmpty) {
		t.Errorf("Decode(nil): %v, want ErrEmpty", err)
	}
	if Length(nil) != 0 || Length([]byte{0x06}) != 1 || Length([]byte{0x48, 0x89, 0xe5}) != 3 {
		t.Errorf("Length: %d %d %d", Length(nil), Length([]byte{0x06}), Length([]byte{0x48, 0x89, 0xe5}))
	}
	// Linear decoding of junk covers every byte exactly once.
	junk := []byte{0x06, 0x07, 0x0f, 0x0b, 0xc4, 0x62, 0x8f, 0xe8, 0x0f, 0x38}
	total := 0
	for _, in := range DecodeAll(junk, 0) {
		if in.Len < 1 {
			t.Fatalf("zero-length instruction in %v", texts(DecodeAll(junk, 0)))
		}
		total += in.Len
	}
	if total != len(junk) {
		t.Errorf("DecodeAll covered %d of %d bytes", total, len(junk))
	}
}

// symbols is a tiny symbol table for the symbolizer tests.
func symbols(addr uint64) (string, uint64, bool) {
	table := []struct {
		name       string
		start, end uint64
	}{{"foo", 0x401136, 0x401180}, {"counter", 0x404028, 0x40402c}}
	for _, s := range table {
		if addr >= s.start && addr < s.end {
			return s.name, addr - s.start, true
		}
	}
	return "", 0, false
}

func TestSymbolizer(t *testing.T) {
	cases := []struct {
		addr       uint64
		bytes      []byte
		gnu, intel string
	}{
		// call foo: e8 rel32 from 0x401200 to 0x401136.
		{0x401200, hex(0xe8, 0x31, 0xff, 0xff, 0xff), "call   0x401136 <foo>", "call   0x401136 <foo>"},
		// jmp foo+0x10.
		{0x401200, hex(0xe9, 0x41, 0xff, 0xff, 0xff), "jmp    0x401146 <foo+0x10>", "jmp    0x401146 <foo+0x10>"},
		// A target the symbolizer cannot name.
		{0x401200, hex(0xeb, 0x00), "jmp    0x401202", "jmp    0x401202"},
		// mov counter(%rip),%eax: 8b 05 disp32, next = 0x401206, disp = 0x2e22.
		{0x401200, hex(0x8b, 0x05, 0x22, 0x2e, 0x00, 0x00), "mov    0x2e22(%rip),%eax        # 0x404028 <counter>",
			"mov    eax,DWORD PTR [rip+0x2e22]        # 0x404028 <counter>"},
	}
	for _, c := range cases {
		in, err := Decode(c.bytes, c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.Text(GNU, symbols); got != c.gnu {
			t.Errorf("GNU % x = %q, want %q", c.bytes, got, c.gnu)
		}
		if got := in.Text(Intel, symbols); got != c.intel {
			t.Errorf("Intel % x = %q, want %q", c.bytes, got, c.intel)
		}
	}
}

func TestOperands(t *testing.T) {
	decode := func(addr uint64, b ...byte) Instruction {
		t.Helper()
		in, err := Decode(b, addr)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}

	// mov -0x14(%rbp),%eax
	in := decode(0x1000, 0x8b, 0x45, 0xec)
	g := in.Operands(GNU)
	if len(g) != 2 || g[0].Kind != OperandMemory || g[0].Base != "rbp" || g[0].Displacement != -0x14 || g[0].Text != "-0x14(%rbp)" ||
		g[1].Kind != OperandRegister || g[1].Text != "%eax" {
		t.Errorf("GNU operands of mov -0x14(%%rbp),%%eax: %+v", g)
	}
	i := in.Operands(Intel)
	if len(i) != 2 || i[0].Text != "eax" || i[1].Text != "DWORD PTR [rbp-0x14]" || i[1].Base != "rbp" {
		t.Errorf("Intel operands: %+v", i)
	}

	// mov (%rdx,%rax,4),%ecx: base, index, scale.
	in = decode(0x1000, 0x8b, 0x0c, 0x82)
	if m := in.Operands(GNU)[0]; m.Base != "rdx" || m.Index != "rax" || m.Scale != 4 || m.HasValue {
		t.Errorf("SIB operand: %+v", m)
	}

	// call: an Address with the target as its value.
	in = decode(0x401200, 0xe8, 0x31, 0xff, 0xff, 0xff)
	if a := in.Operands(Intel); len(a) != 1 || a[0].Kind != OperandAddress || a[0].Value != 0x401136 || !a[0].HasValue {
		t.Errorf("call operand: %+v", a)
	}

	// cmp $-1,%eax: objdump's text, the sign-extended value.
	in = decode(0x1000, 0x83, 0xf8, 0xff)
	if imm := in.Operands(GNU)[0]; imm.Kind != OperandImmediate || imm.Text != "$0xffffffff" || imm.Value != ^uint64(0) {
		t.Errorf("immediate: %+v", imm)
	}

	// lea 0x2e22(%rip),%rdi: the memory operand knows its address.
	in = decode(0x401200, 0x48, 0x8d, 0x3d, 0x22, 0x2e, 0x00, 0x00)
	if m := in.Operands(GNU)[0]; m.Kind != OperandMemory || !m.HasValue || m.Value != 0x404029 || m.Base != "rip" {
		t.Errorf("RIP-relative operand: %+v", m)
	}

	// call *%rax: an indirect register operand.
	in = decode(0x1000, 0xff, 0xd0)
	if r := in.Operands(GNU); len(r) != 1 || r[0].Kind != OperandRegister || r[0].Text != "*%rax" {
		t.Errorf("indirect call operand: %+v", r)
	}

	// Named instructions have no operands; Bad ones have their byte.
	endbr := decode(0x1000, 0xf3, 0x0f, 0x1e, 0xfa)
	if ops := endbr.Operands(GNU); len(ops) != 0 {
		t.Errorf("endbr64 operands: %+v", ops)
	}
	bad, _ := Decode([]byte{0x06}, 0)
	if ops := bad.Operands(Intel); len(ops) != 1 || ops[0].Value != 6 {
		t.Errorf(".byte operands: %+v", ops)
	}
}

func TestControlFlow(t *testing.T) {
	cases := []struct {
		name   string
		bytes  []byte
		flow   Flow
		target uint64 // 0: no static target
	}{
		{"call rel32", hex(0xe8, 0x10, 0, 0, 0), FlowCall, 0x1015},
		{"call *%rax", hex(0xff, 0xd0), FlowCall, 0},
		{"call *mem", hex(0xff, 0x15, 0, 0, 0, 0), FlowCall, 0},
		{"jmp rel8 to self", hex(0xeb, 0xfe), FlowJump, 0x1000},
		{"notrack jmp *%rax", hex(0x3e, 0xff, 0xe0), FlowJump, 0},
		{"je", hex(0x74, 0x02), FlowCondJump, 0x1004},
		{"jne rel32", hex(0x0f, 0x85, 0x00, 0x01, 0, 0), FlowCondJump, 0x1106},
		{"loop", hex(0xe2, 0xfe), FlowCondJump, 0x1000},
		{"jrcxz", hex(0xe3, 0x00), FlowCondJump, 0x1002},
		{"ret", hex(0xc3), FlowReturn, 0},
		{"ret imm16", hex(0xc2, 0x08, 0x00), FlowReturn, 0},
		{"repz ret", hex(0xf3, 0xc3), FlowReturn, 0},
		{"syscall", hex(0x0f, 0x05), FlowSyscall, 0},
		{"int 0x80", hex(0xcd, 0x80), FlowSyscall, 0},
		{"int3", hex(0xcc), FlowTrap, 0},
		{"ud2", hex(0x0f, 0x0b), FlowTrap, 0},
		{"hlt", hex(0xf4), FlowTrap, 0},
		{"bad byte", hex(0x06), FlowTrap, 0},
		{"endbr64", hex(0xf3, 0x0f, 0x1e, 0xfa), FlowNone, 0},
		{"mov", hex(0x48, 0x89, 0xe5), FlowNone, 0},
	}
	for _, c := range cases {
		in, _ := Decode(c.bytes, 0x1000)
		if f := in.Flow(); f != c.flow {
			t.Errorf("%s: flow %v, want %v", c.name, f, c.flow)
		}
		ret, isCall := in.IsCall()
		if isCall != (c.flow == FlowCall) || isCall && ret != 0x1000+uint64(len(c.bytes)) {
			t.Errorf("%s: IsCall = %#x, %v", c.name, ret, isCall)
		}
		if in.IsReturn() != (c.flow == FlowReturn) {
			t.Errorf("%s: IsReturn = %v", c.name, in.IsReturn())
		}
		if in.IsJump() != (c.flow == FlowJump || c.flow == FlowCondJump) {
			t.Errorf("%s: IsJump = %v", c.name, in.IsJump())
		}
		target, ok := in.BranchTarget()
		if ok != (c.target != 0) || target != c.target {
			t.Errorf("%s: BranchTarget = %#x, %v; want %#x", c.name, target, ok, c.target)
		}
	}
}

func TestPCRelative(t *testing.T) {
	cases := []struct {
		name         string
		bytes        []byte
		offset, size int
	}{
		{"call rel32", hex(0xe8, 1, 2, 3, 4), 1, 4},
		{"jmp rel8", hex(0xeb, 0x10), 1, 1},
		{"jne rel32", hex(0x0f, 0x85, 1, 2, 3, 4), 2, 4},
		{"bnd jmp rel32", hex(0xf2, 0xe9, 1, 2, 3, 4), 2, 4},
		{"lea rip", hex(0x48, 0x8d, 0x3d, 1, 2, 3, 4), 3, 4},
		{"movl imm to rip", hex(0xc7, 0x05, 1, 2, 3, 4, 0x2a, 0, 0, 0), 2, 4},
		{"VEX rip", hex(0xc5, 0x7d, 0x6f, 0x15, 1, 2, 3, 4), 4, 4},
		{"EVEX rip", hex(0x62, 0x61, 0xfd, 0x28, 0x6f, 0x2d, 1, 2, 3, 4), 6, 4},
		{"cmpb imm8 rip", hex(0x80, 0x3d, 1, 2, 3, 4, 0), 2, 4},
	}
	for _, c := range cases {
		in, err := Decode(c.bytes, 0x1000)
		if err != nil || in.Len != len(c.bytes) {
			t.Fatalf("%s: %v, len %d", c.name, err, in.Len)
		}
		off, size, ok := in.PCRelative()
		if !ok || off != c.offset || size != c.size {
			t.Errorf("%s (%s): PCRelative = %d, %d, %v; want %d, %d", c.name, in.Text(GNU, nil), off, size, ok, c.offset, c.size)
		}
		if raw, _ := in.Raw(); raw.PCRel != 0 && (raw.PCRel != size || raw.PCRelOff != off) {
			t.Errorf("%s: x86asm says %d bytes at %d", c.name, raw.PCRel, raw.PCRelOff)
		}
	}
	for _, b := range [][]byte{{0xff, 0xd0}, {0x48, 0x8b, 0x45, 0xf8}, {0xc3}, {0x06}} {
		in, _ := Decode(b, 0)
		if _, _, ok := in.PCRelative(); ok {
			t.Errorf("% x (%s) has no PC-relative field", b, in.Text(GNU, nil))
		}
	}
}
