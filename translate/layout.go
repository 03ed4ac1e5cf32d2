package translate

// x86asm (v0.32) decodes VEX and EVEX instructions with a rip-relative
// operand as if the operand were absolute ([disp32], no PCRel), and fails on
// some VEX forms. A relocator that trusted it would move such an instruction
// unchanged and read the wrong address. So the ModRM byte is located here, by
// the encoding rules alone, and an instruction is rip-relative when either this
// or x86asm says so.

// layout is where the parts of one instruction are.
type layout struct {
	pfx     int  // legacy prefix bytes
	rex     int  // index of the REX byte, or -1
	vex     byte // 0, 0xc4/0xc5 (VEX), 0x62 (EVEX) or 0x8f (XOP)
	op      int  // index of the opcode byte
	modrm   int  // index of the ModRM byte, or -1
	vvvv    int  // the register VEX/EVEX's vvvv names, or -1
	addr32  bool // 0x67: 32-bit addressing
	regOnly bool // ModRM.rm always names a register (mov to/from CR, DR, TR)
	escaped bool // the opcode is in a 0f map
}

// ripRelative reports whether the instruction's ModRM names rip+disp32 (the
// displacement then follows ModRM: there is no SIB in that form).
func (l layout) ripRelative(insn []byte) bool {
	return l.modrm >= 0 && !l.regOnly && l.modrm < len(insn) && insn[l.modrm]&0xc7 == 0x05
}

// decodeLayout locates the prefixes, opcode and ModRM of the instruction at the
// start of insn. ok is false when insn ends too early to tell.
func decodeLayout(insn []byte) (l layout, ok bool) {
	l = layout{rex: -1, modrm: -1, vvvv: -1}
	i := prefixLen(insn)
	for _, b := range insn[:i] {
		if b == 0x67 {
			l.addr32 = true
		}
	}
	l.pfx = i
	at := func(k int) (byte, bool) {
		if k < len(insn) {
			return insn[k], true
		}
		return 0, false
	}
	b, ok := at(i)
	if !ok {
		return l, false
	}
	if b&0xf0 == 0x40 {
		l.rex = i
		i++
		if b, ok = at(i); !ok {
			return l, false
		}
	}
	switch b {
	case 0xc5, 0xc4, 0x62:
		n := map[byte]int{0xc5: 2, 0xc4: 3, 0x62: 4}[b]
		if i+n >= len(insn) {
			return l, false
		}
		l.vex, l.escaped = b, true
		vb := insn[i+n-1] // the byte holding vvvv (the last prefix byte but for EVEX)
		if b == 0x62 {
			vb = insn[i+2]
		}
		l.vvvv = int(^vb >> 3 & 0xf)
		l.op = i + n
		if b == 0xc5 || (b == 0xc4 && insn[i+1]&0x1f == 1) {
			if insn[l.op] == 0x77 { // vzeroupper, vzeroall
				return l, true
			}
		}
		l.modrm = l.op + 1
		return l, true
	case 0x8f:
		if nb, ok := at(i + 1); ok && nb&0x1f >= 8 { // XOP (8f with map >= 8)
			if i+3 >= len(insn) {
				return l, false
			}
			l.vex, l.escaped, l.op, l.modrm = b, true, i+3, i+4
			l.vvvv = int(^insn[i+2] >> 3 & 0xf)
			return l, true
		}
	case 0x0f:
		nb, ok := at(i + 1)
		if !ok {
			return l, false
		}
		l.escaped = true
		switch nb {
		case 0x38, 0x3a:
			l.op, l.modrm = i+2, i+3
		case 0x0f: // 3DNow!: ModRM, then the opcode as an immediate
			l.op, l.modrm = i+1, i+2
		default:
			l.op = i + 1
			if twoByteModRM(nb) {
				l.modrm = i + 2
			}
			l.regOnly = nb >= 0x20 && nb <= 0x27
		}
		return l, true
	}
	l.op = i
	if oneByteModRM(b) {
		l.modrm = i + 1
	}
	return l, true
}

// oneByteModRM reports whether a one-byte opcode (64-bit mode) has a ModRM.
func oneByteModRM(op byte) bool {
	switch {
	case op < 0x40:
		return op&7 < 4 // the ALU rows: add/or/adc/sbb/and/sub/xor/cmp r/m forms
	case op == 0x62 || op == 0x63 || op == 0x69 || op == 0x6b:
		return true
	case op >= 0x80 && op <= 0x8f:
		return true
	case op == 0xc0 || op == 0xc1 || op == 0xc4 || op == 0xc5 || op == 0xc6 || op == 0xc7:
		return true
	case op >= 0xd0 && op <= 0xd3, op >= 0xd8 && op <= 0xdf:
		return true
	case op == 0xf6 || op == 0xf7 || op == 0xfe || op == 0xff:
		return true
	}
	return false
}

// twoByteModRM reports whether a 0f-map opcode has a ModRM.
func twoByteModRM(op byte) bool {
	switch {
	case op >= 0x04 && op <= 0x0c && op != 0x0d: // syscall clts sysret invd wbinvd ud2 ...
		return false
	case op == 0x0e: // femms
		return false
	case op >= 0x30 && op <= 0x37: // wrmsr rdtsc rdmsr rdpmc sysenter sysexit getsec
		return false
	case op == 0x77: // emms
		return false
	case op >= 0x80 && op <= 0x8f: // jcc rel32
		return false
	case op == 0xa0 || op == 0xa1 || op == 0xa2 || op == 0xa8 || op == 0xa9 || op == 0xaa:
		return false
	case op >= 0xc8 && op <= 0xcf: // bswap
		return false
	}
	return true
}
