package disasm

import (
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// Memory operands are rendered here rather than by x86asm, whose GNU renderer
// loses information objdump shows and has real errors, found by the objdump
// comparison over libc: a disp32 is shown unsigned (`0xffffff78(%rbp)` for
// `-0x88(%rbp)`), an absolute address 0 disappears (`movzbl ,%eax`), a VEX
// payload byte equal to 0x65 is taken for a %gs override, and the SIB forms
// `(%r12,%riz)` and `(%rax,%rax)` differ from objdump's `(%r12)` and
// `(%rax,%rax,1)`. Rendering needs the ModRM/SIB bytes (whether a zero
// displacement was encoded, whether a SIB byte without index is present), so
// they are located in the encoding.

// modrmInfo describes the addressing bytes of an instruction.
type modrmInfo struct {
	ok                 bool // a ModRM byte was found (false for moffs forms)
	pos                int  // its offset in the encoding
	mod, rm            byte
	sib                bool
	sibScale, sibIndex byte
	sibBase            byte
}

// addressing locates ModRM (and SIB) in code, an instruction x86asm decoded
// with a memory operand.
func addressing(code []byte) modrmInfo {
	i := legacyPrefixLen(code)
	if i < len(code) && code[i]&0xf0 == 0x40 { // REX
		i++
	}
	if i >= len(code) {
		return modrmInfo{}
	}
	switch code[i] {
	case 0xc5: // VEX2: C5 payload opcode ModRM
		i += 3
	case 0xc4: // VEX3: C4 payload payload opcode ModRM
		i += 4
	case 0x62: // EVEX: 62 P0 P1 P2 opcode ModRM
		i += 5
	case 0x0f:
		if i+1 < len(code) && (code[i+1] == 0x38 || code[i+1] == 0x3a) {
			i += 3
		} else {
			i += 2
		}
	case 0xa0, 0xa1, 0xa2, 0xa3: // mov with a 64-bit absolute address: no ModRM
		return modrmInfo{}
	default:
		i++
	}
	if i >= len(code) {
		return modrmInfo{}
	}
	m := modrmInfo{ok: true, pos: i, mod: code[i] >> 6, rm: code[i] & 7}
	if m.mod != 3 && m.rm == 4 && i+1 < len(code) {
		s := code[i+1]
		m.sib, m.sibScale, m.sibIndex, m.sibBase = true, s>>6, (s>>3)&7, s&7
	}
	return m
}

// dispEncoded reports whether the encoding carries a displacement (which
// objdump shows even when it is zero: `0x0(%rbp)`).
func (m modrmInfo) dispEncoded() bool {
	if !m.ok {
		return true
	}
	return m.mod == 1 || m.mod == 2 || m.mod == 0 && (m.rm == 5 || m.sib && m.sibBase == 5)
}

// regName returns a register's name in lower case without the % sigil, as
// objdump spells it (r8d, xmm3, rip).
func regName(r x86asm.Reg) string {
	if r == 0 {
		return ""
	}
	s := strings.ToLower(r.String())
	switch {
	case len(s) >= 2 && s[0] == 'x' && s[1] >= '0' && s[1] <= '9':
		return "xmm" + s[1:]
	case len(s) >= 2 && s[0] == 'y' && s[1] >= '0' && s[1] <= '9':
		return "ymm" + s[1:]
	case len(s) >= 2 && s[0] == 'z' && s[1] >= '0' && s[1] <= '9':
		return "zmm" + s[1:]
	case strings.HasPrefix(s, "r") && strings.HasSuffix(s, "l") && len(s) > 2 && s[1] >= '0' && s[1] <= '9':
		return s[:len(s)-1] + "d" // x86asm's R8L is r8d
	}
	return s
}

// memoryText renders one memory operand. sizeKeyword is the Intel
// "DWORD PTR " part (empty in GNU syntax). A segment override the CPU ignores
// in 64-bit mode (cs, ds, es, ss) is not part of the operand: objdump shows it
// as a prefix word, and so does this package (see segmentWord).
func memoryText(syntax Syntax, m x86asm.Mem, enc modrmInfo, sizeKeyword string) string {
	var b strings.Builder
	seg := ""
	if m.Segment == x86asm.FS || m.Segment == x86asm.GS {
		seg = regName(m.Segment)
	}
	hasBase, hasIndex := m.Base != 0, m.Index != 0
	disp := m.Disp
	if enc.ok {
		disp = int64(int32(disp)) // ModRM displacements are at most 32 bits, sign-extended
	}
	riz := enc.sib && !hasIndex && hasBase && (enc.sibScale != 0 || enc.sibBase != 4)
	index := regName(m.Index)
	if riz {
		index = "riz"
		if m.Base >= x86asm.EAX && m.Base <= x86asm.R15L {
			index = "eiz"
		}
	}
	scale := int(m.Scale)
	if riz || scale == 0 {
		scale = 1 << enc.sibScale
	}
	showDisp := enc.dispEncoded() || !hasBase && !hasIndex

	if syntax == GNU {
		if seg != "" {
			b.WriteString("%" + seg + ":")
		}
		if showDisp {
			if hasBase || hasIndex {
				b.WriteString(signedHex(disp))
			} else {
				b.WriteString("0x" + strconv.FormatUint(uint64(disp), 16))
			}
		}
		if hasBase || index != "" {
			b.WriteByte('(')
			if hasBase {
				b.WriteString("%" + regName(m.Base))
			}
			if index != "" {
				b.WriteString(",%" + index + "," + strconv.Itoa(scale))
			}
			b.WriteByte(')')
		}
		return b.String()
	}

	b.WriteString(sizeKeyword)
	if !hasBase && index == "" {
		if seg == "" {
			seg = "ds"
		}
		b.WriteString(seg + ":0x" + strconv.FormatUint(uint64(disp), 16))
		return b.String()
	}
	if seg != "" {
		b.WriteString(seg + ":")
	}
	b.WriteByte('[')
	if hasBase {
		b.WriteString(regName(m.Base))
	}
	if index != "" {
		if hasBase {
			b.WriteByte('+')
		}
		b.WriteString(index + "*" + strconv.Itoa(scale))
	}
	if showDisp {
		switch {
		case disp < 0:
			b.WriteString(signedHex(disp))
		default:
			b.WriteString("+" + signedHex(disp))
		}
	}
	b.WriteByte(']')
	return b.String()
}

func signedHex(v int64) string {
	if v < 0 {
		return "-0x" + strconv.FormatUint(uint64(-v), 16)
	}
	return "0x" + strconv.FormatUint(uint64(v), 16)
}
