package disasm

import "golang.org/x/arch/x86/x86asm"

// Instructions x86asm cannot decode but real compiled code contains are
// decoded here from their ModRM bytes into an x86asm.Inst whose Op is a
// stand-in with the same operand shapes (so x86asm's formatters print the
// operands), plus the real mnemonic:
//   - adcx/adox (66/F3 [REX] 0F 38 F6 /r), used by bignum code (OpenSSL):
//     x86asm returns a lone one-byte "data16"/"rep" prefix for them, which
//     desynchronises everything after it;
//   - AMD XOP (8F, map 8-10), e.g. vprotd in OpenSSL's ChaCha: x86asm does not
//     know the XOP prefix. vprot{b,w,d,q} with an immediate are named; other
//     XOP instructions get their correct length and are shown as bytes;
//   - AMD FMA4 (VEX.0F3A 5C-5F, 68-6F, 78-7F with a register in imm8[7:4]),
//     e.g. vfmaddsd in glibc's libm: unknown to x86asm;
//   - rdseed (0F C7 /7) and rdpid (F3 0F C7 /7), unknown to x86asm, and
//     rdrand with REX.W, whose %rax operand x86asm loses;
//   - fwait followed by a non-waiting x87 control instruction, which objdump
//     (and the assembler) treat as one instruction: 9B DF E0 is fstsw %ax,
//     where x86asm returns fwait and then fnstsw.

// maySynthesize is a cheap filter for synthesize: it is false for every
// encoding synthesize would reject (most instructions), so that Decode does not
// pay for building and copying an Instruction it would throw away.
func maySynthesize(code []byte) bool {
	p := legacyPrefixLen(code)
	if p >= len(code) {
		return false
	}
	switch code[p] {
	case 0x8f, 0xc4, 0x9b:
		return true
	}
	i := p
	if code[i]&0xf0 == 0x40 {
		i++
	}
	return i+1 < len(code) && code[i] == 0x0f && (code[i+1] == 0x38 || code[i+1] == 0xc7)
}

// synthesize returns an instruction for code when it is one of the encodings
// above; ok is false otherwise.
func synthesize(code []byte, addr uint64) (Instruction, bool) {
	p := legacyPrefixLen(code)
	if p >= len(code) {
		return Instruction{}, false
	}
	if in, ok := decodeRandom(code, addr, p); ok {
		return in, true
	}
	switch {
	case code[p] == 0x8f && p+1 < len(code) && code[p+1]&0x1f >= 8:
		return decodeXOP(code, addr, p)
	case code[p] == 0xc4 && p == 0:
		return decodeFMA4(code, addr)
	case code[p] == 0x9b && p == 0 && len(code) > 1:
		return decodeWaitingX87(code, addr)
	}
	// adcx/adox: the last legacy prefix selects (66: adcx, F3: adox).
	if p == 0 {
		return Instruction{}, false
	}
	last := code[p-1]
	if last != 0x66 && last != 0xf3 {
		return Instruction{}, false
	}
	i := p
	var rex byte
	if code[i]&0xf0 == 0x40 {
		rex = code[i]
		i++
	}
	if i+3 >= len(code) || code[i] != 0x0f || code[i+1] != 0x38 || code[i+2] != 0xf6 {
		return Instruction{}, false
	}
	reg, rm, n, ok := decodeModRM(code, i+3, rex&4 != 0, rex&2 != 0, rex&1 != 0)
	if !ok {
		return Instruction{}, false
	}
	gp := x86asm.EAX
	size := 32
	if rex&8 != 0 {
		gp, size = x86asm.RAX, 64
	}
	name := "adcx"
	if last == 0xf3 {
		name = "adox"
	}
	inst := x86asm.Inst{Op: x86asm.ADC, Mode: 64, AddrSize: 64, DataSize: size, MemBytes: size / 8, Len: i + 3 + n}
	inst.Args[0] = gp + x86asm.Reg(reg)
	inst.Args[1] = rm.arg(gp)
	return Instruction{Address: addr, Len: inst.Len, Bytes: code[:inst.Len:inst.Len], Kind: Decoded, inst: inst, rename: name}, true
}

// modrmOperand is the r/m operand of a ModRM byte: a register number or a
// memory reference.
type modrmOperand struct {
	isReg bool
	reg   int
	mem   x86asm.Mem
}

func (o modrmOperand) arg(regBase x86asm.Reg) x86asm.Arg {
	if o.isReg {
		return regBase + x86asm.Reg(o.reg)
	}
	return o.mem
}

// decodeModRM decodes the ModRM byte at code[pos] (with the REX/VEX/XOP R, X, B
// extension bits) and returns the reg field, the r/m operand and the number of
// bytes ModRM, SIB and displacement take.
func decodeModRM(code []byte, pos int, r, x, b bool) (reg int, rm modrmOperand, n int, ok bool) {
	if pos >= len(code) {
		return 0, rm, 0, false
	}
	bit := func(v bool) int {
		if v {
			return 8
		}
		return 0
	}
	m := code[pos]
	mod, regf, rmf := m>>6, int(m>>3&7), int(m&7)
	reg = regf + bit(r)
	n = 1
	if mod == 3 {
		return reg, modrmOperand{isReg: true, reg: rmf + bit(b)}, n, true
	}
	mem := x86asm.Mem{}
	dispSize := 0
	switch mod {
	case 1:
		dispSize = 1
	case 2:
		dispSize = 4
	}
	switch {
	case rmf == 4:
		if pos+1 >= len(code) {
			return 0, rm, 0, false
		}
		sib := code[pos+1]
		n++
		scale, index, base := sib>>6, int(sib>>3&7)+bit(x), int(sib&7)
		if index != 4 {
			mem.Index = x86asm.RAX + x86asm.Reg(index)
			mem.Scale = 1 << scale
		}
		if base == 5 && mod == 0 {
			dispSize = 4
		} else {
			mem.Base = x86asm.RAX + x86asm.Reg(base+bit(b))
		}
	case rmf == 5 && mod == 0:
		mem.Base = x86asm.RIP
		dispSize = 4
	default:
		mem.Base = x86asm.RAX + x86asm.Reg(rmf+bit(b))
	}
	if pos+n+dispSize > len(code) {
		return 0, rm, 0, false
	}
	switch dispSize {
	case 1:
		mem.Disp = int64(int8(code[pos+n]))
	case 4:
		d := code[pos+n:]
		mem.Disp = int64(int32(uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24))
	}
	n += dispSize
	return reg, modrmOperand{mem: mem}, n, true
}

// decodeXOP decodes an AMD XOP instruction: 8F [RXB mmmmm] [W vvvv L pp]
// opcode ModRM [SIB] [disp] [imm]. Map 8 instructions carry an imm8, map 10
// an imm32, map 9 none.
func decodeXOP(code []byte, addr uint64, p int) (Instruction, bool) {
	if p+4 >= len(code) || p > 0 {
		return Instruction{}, false // XOP takes no legacy prefixes
	}
	b1, b2, opcode := code[1], code[2], code[3]
	xmap := b1 & 0x1f
	immSize := 0
	switch xmap {
	case 8:
		immSize = 1
	case 9:
	case 10:
		immSize = 4
	default:
		return Instruction{}, false
	}
	reg, rm, n, ok := decodeModRM(code, 4, b1&0x80 == 0, b1&0x40 == 0, b1&0x20 == 0)
	if !ok || 4+n+immSize > len(code) {
		return Instruction{}, false
	}
	length := 4 + n + immSize
	in := Instruction{Address: addr, Len: length, Bytes: code[:length:length]}
	if xmap == 8 && opcode >= 0xc0 && opcode <= 0xc3 && b2&0x04 == 0 { // vprot{b,w,d,q} xmm, xmm/m128, imm8
		inst := x86asm.Inst{Op: x86asm.PSHUFD, Mode: 64, AddrSize: 64, DataSize: 32, MemBytes: 16, Len: length}
		inst.Args[0] = x86asm.X0 + x86asm.Reg(reg)
		inst.Args[1] = rm.arg(x86asm.X0)
		inst.Args[2] = x86asm.Imm(code[length-1])
		in.Kind, in.inst, in.rename = Decoded, inst, "vprot"+string("bwdq"[opcode-0xc0])
		return in, true
	}
	in.Kind = Bad // known length, unknown name: shown as .byte 0x8f,...
	return in, true
}

// fma4Names are the FMA4 mnemonics by VEX.0F3A opcode.
var fma4Names = map[byte]string{
	0x5c: "vfmaddsubps", 0x5d: "vfmaddsubpd", 0x5e: "vfmsubaddps", 0x5f: "vfmsubaddpd",
	0x68: "vfmaddps", 0x69: "vfmaddpd", 0x6a: "vfmaddss", 0x6b: "vfmaddsd",
	0x6c: "vfmsubps", 0x6d: "vfmsubpd", 0x6e: "vfmsubss", 0x6f: "vfmsubsd",
	0x78: "vfnmaddps", 0x79: "vfnmaddpd", 0x7a: "vfnmaddss", 0x7b: "vfnmaddsd",
	0x7c: "vfnmsubps", 0x7d: "vfnmsubpd", 0x7e: "vfnmsubss", 0x7f: "vfnmsubsd",
}

// decodeFMA4 decodes C4 [RXB 00011] [W vvvv L 01] opcode ModRM ... is4:
// dest = ModRM.reg, src1 = vvvv, then (W=0) r/m, is4 or (W=1) is4, r/m.
func decodeFMA4(code []byte, addr uint64) (Instruction, bool) {
	if len(code) < 6 || code[1]&0x1f != 3 || code[2]&0x03 != 1 {
		return Instruction{}, false
	}
	name, ok := fma4Names[code[3]]
	if !ok {
		return Instruction{}, false
	}
	b1, b2 := code[1], code[2]
	reg, rm, n, ok := decodeModRM(code, 4, b1&0x80 == 0, b1&0x40 == 0, b1&0x20 == 0)
	if !ok || 4+n+1 > len(code) {
		return Instruction{}, false
	}
	length := 4 + n + 1
	vec, memBytes := x86asm.X0, 16
	if b2&0x04 != 0 {
		vec, memBytes = x86asm.Y0, 32
	}
	switch name[len(name)-2:] {
	case "ss":
		memBytes = 4
	case "sd":
		memBytes = 8
	}
	vvvv := x86asm.Reg(^b2 >> 3 & 0xf)
	is4 := vec + x86asm.Reg(code[length-1]>>4)
	// VBLENDVPS has the same shape (dest, vvvv, r/m, is4); x86asm's formatters
	// print the arguments in order, so the W=1 order is expressed by swapping.
	inst := x86asm.Inst{Op: x86asm.VBLENDVPS, Mode: 64, AddrSize: 64, DataSize: 32, MemBytes: memBytes, Len: length}
	inst.Args[0] = vec + x86asm.Reg(reg)
	inst.Args[1] = vec + vvvv
	inst.Args[2], inst.Args[3] = rm.arg(vec), is4
	if b2&0x80 != 0 { // W=1
		inst.Args[2], inst.Args[3] = is4, rm.arg(vec)
	}
	return Instruction{Address: addr, Len: length, Bytes: code[:length:length], Kind: Decoded, inst: inst, rename: name}, true
}

// waitingForms are the x87 control instructions that fwait turns into their
// waiting forms.
var waitingForms = map[x86asm.Op]string{
	x86asm.FNSTSW: "fstsw", x86asm.FNSTCW: "fstcw", x86asm.FNCLEX: "fclex",
	x86asm.FNINIT: "finit", x86asm.FNSTENV: "fstenv", x86asm.FNSAVE: "fsave",
}

func decodeWaitingX87(code []byte, addr uint64) (Instruction, bool) {
	inst, err := x86asm.Decode(code[1:], 64)
	if err != nil {
		return Instruction{}, false
	}
	name, ok := waitingForms[inst.Op]
	if !ok || fixup(&inst, code[1:]) != nil {
		return Instruction{}, false
	}
	length := inst.Len + 1
	return Instruction{Address: addr, Len: length, Bytes: code[:length:length], Kind: Decoded, inst: inst, rename: name, lead: 1}, true
}

// decodeAlias decodes the encodings x86asm rejects that the CPU (and objdump)
// execute as another instruction, by decoding a patched copy:
//   - C0/C1/D0-D3 /6 (sal, an alias of shl /4) and F6/F7 /1 (an alias of test
//     /0);
//   - 0F 19-1F /r, reserved hint NOPs that execute as nop Ev (x86asm knows
//     only 0F 1F /0).
//
// The instruction keeps its real bytes.
func decodeAlias(code []byte, addr uint64) (Instruction, bool) {
	var buf [MaxInstructionLen]byte
	n := copy(buf[:], code)
	patched := buf[:n]
	i := legacyPrefixLen(patched)
	if i < n && patched[i]&0xf0 == 0x40 {
		i++
	}
	if i+1 >= n {
		return Instruction{}, false
	}
	switch op, modrm := patched[i], patched[i+1]; {
	case (op == 0xc0 || op == 0xc1 || op >= 0xd0 && op <= 0xd3) && modrm>>3&7 == 6:
		patched[i+1] = modrm&^0x38 | 4<<3
	case (op == 0xf6 || op == 0xf7) && modrm>>3&7 == 1:
		patched[i+1] = modrm &^ 0x38
	case op == 0x0f && modrm >= 0x19 && modrm <= 0x1f && i+2 < n:
		patched[i+1] = 0x1f     // x86asm knows only 0F 1F /0
		patched[i+2] &^= 7 << 3 // (the reg field is ignored by the CPU)
	default:
		return Instruction{}, false
	}
	inst, err := x86asm.Decode(patched, 64)
	if err != nil || fixup(&inst, patched) != nil || inst.Len > len(code) {
		return Instruction{}, false
	}
	return Instruction{Address: addr, Len: inst.Len, Bytes: code[:inst.Len:inst.Len], Kind: Decoded, inst: inst}, true
}

// decodeRandom decodes [66|F3] [REX] 0F C7 /6 or /7 with a register operand:
// rdrand, rdseed, and (with F3, /7) rdpid.
func decodeRandom(code []byte, addr uint64, p int) (Instruction, bool) {
	i := p
	var rex byte
	if i < len(code) && code[i]&0xf0 == 0x40 {
		rex = code[i]
		i++
	}
	if i+2 >= len(code) || code[i] != 0x0f || code[i+1] != 0xc7 || code[i+2] < 0xc0 {
		return Instruction{}, false
	}
	modrm := code[i+2]
	reg := modrm >> 3 & 7
	if reg != 6 && reg != 7 {
		return Instruction{}, false
	}
	var data16, rep bool
	for _, b := range code[:p] {
		switch b {
		case 0x66:
			data16 = true
		case 0xf3:
			rep = true
		default:
			return Instruction{}, false
		}
	}
	name := "rdrand"
	if reg == 7 {
		name = "rdseed"
	}
	base, size := x86asm.EAX, 32
	switch {
	case rep && reg == 7:
		name, base, size = "rdpid", x86asm.RAX, 64 // always a 64-bit register
	case rep:
		return Instruction{}, false
	case rex&8 != 0:
		base, size = x86asm.RAX, 64
	case data16:
		base, size = x86asm.AX, 16
	}
	rm := int(modrm & 7)
	if rex&1 != 0 {
		rm += 8
	}
	length := i + 3
	inst := x86asm.Inst{Op: x86asm.RDRAND, Mode: 64, AddrSize: 64, DataSize: size, Len: length}
	inst.Args[0] = base + x86asm.Reg(rm)
	return Instruction{Address: addr, Len: length, Bytes: code[:length:length], Kind: Decoded, inst: inst, rename: name}, true
}
