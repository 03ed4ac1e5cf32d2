package disasm

import (
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// Objdump's spelling of the older parts of the instruction set: string
// instructions, prefix words, multi-byte NOP padding and the x87 stack.

// isStringOp reports whether op is a string instruction (movs, stos, lods,
// scas, cmps, ins, outs), whose operands are implicit.
func isStringOp(op x86asm.Op) bool {
	switch op {
	case x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ,
		x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ,
		x86asm.LODSB, x86asm.LODSW, x86asm.LODSD, x86asm.LODSQ,
		x86asm.SCASB, x86asm.SCASW, x86asm.SCASD, x86asm.SCASQ,
		x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ,
		x86asm.INSB, x86asm.INSW, x86asm.INSD, x86asm.OUTSB, x86asm.OUTSW, x86asm.OUTSD:
		return true
	}
	return false
}

// intelString spells a string instruction the way objdump's Intel syntax does:
// `rep stos QWORD PTR es:[rdi],rax` rather than `rep stosq QWORD PTR [rdi]`.
func (in *Instruction) intelString(mnem string, f *formatted) string {
	size := mnem[len(mnem)-1]
	base := mnem[:len(mnem)-1]
	switch base {
	case "movs", "stos", "lods", "scas", "cmps", "ins", "outs":
	default:
		return mnem
	}
	var kw, acc string
	switch size {
	case 'b':
		kw, acc = "BYTE PTR ", "al"
	case 'w':
		kw, acc = "WORD PTR ", "ax"
	case 'd':
		kw, acc = "DWORD PTR ", "eax"
	case 'q':
		kw, acc = "QWORD PTR ", "rax"
	default:
		return mnem
	}
	srcSeg := "ds"
	for _, b := range in.Bytes[:legacyPrefixLen(in.Bytes)] {
		switch b {
		case 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65:
			srcSeg = map[byte]string{0x26: "es", 0x2e: "cs", 0x36: "ss", 0x3e: "ds", 0x64: "fs", 0x65: "gs"}[b]
		}
	}
	di, si := kw+"es:[rdi]", kw+srcSeg+":[rsi]" // only the source segment can be overridden
	var ops []string
	switch base {
	case "movs":
		ops = []string{di, si}
	case "stos":
		ops = []string{di, acc}
	case "lods":
		ops = []string{acc, si}
	case "scas":
		ops = []string{acc, di}
	case "cmps":
		ops = []string{si, di}
	case "ins":
		ops = []string{di, "dx"}
	case "outs":
		ops = []string{"dx", si}
	}
	f.operands = f.operands[:0]
	for _, t := range ops {
		k := OperandMemory
		if !strings.Contains(t, "[") {
			k = OperandRegister
		}
		f.operands = append(f.operands, Operand{Kind: k, Text: t})
	}
	return base
}

// nopPrefixWords names the legacy prefixes of a NOP except the last 66, which
// gives the operand size (nopw).
func nopPrefixWords(prefixBytes []byte) []string {
	last66 := -1
	for i, b := range prefixBytes {
		if b == 0x66 {
			last66 = i
		}
	}
	var words []string
	for i, b := range prefixBytes {
		if i == last66 {
			continue
		}
		if w := prefixWord(b); w != "" {
			words = append(words, w)
		}
	}
	return words
}

func prefixWord(b byte) string {
	switch b {
	case 0x66:
		return "data16"
	case 0x67:
		return "addr32"
	case 0x2e:
		return "cs"
	case 0x3e:
		return "ds"
	case 0x26:
		return "es"
	case 0x36:
		return "ss"
	case 0xf0:
		return "lock"
	case 0xf2:
		return "repnz"
	case 0xf3:
		return "repz"
	}
	return ""
}

// appendSegmentWords adds the segment overrides the CPU ignores in 64-bit mode
// (cs, ds, es, ss), which objdump shows as prefix words, not in the operand.
func appendSegmentWords(words []string, prefixBytes []byte) []string {
	for _, b := range prefixBytes {
		switch b {
		case 0x26, 0x2e, 0x36, 0x3e:
			if w := prefixWord(b); !contains(words, w) {
				words = append(words, w)
			}
		}
	}
	return words
}

func isPrefetch(op x86asm.Op) bool {
	switch op {
	case x86asm.PREFETCHT0, x86asm.PREFETCHT1, x86asm.PREFETCHT2, x86asm.PREFETCHNTA, x86asm.PREFETCHW:
		return true
	}
	return false
}

// adjustX87 gives x87 instructions objdump's operands: the implicit st(0) is
// "st" (and not shown at all beside a memory operand or for no-operand
// instructions such as fchs), the ModRM-encoded register is "st(i)".
func (in *Instruction) adjustX87(syntax Syntax, f *formatted) {
	code := in.Bytes[in.lead:]
	p := legacyPrefixLen(code)
	if p < len(code) && code[p]&0xf0 == 0x40 {
		p++
	}
	if p+1 >= len(code) || code[p] < 0xd8 || code[p] > 0xdf {
		return
	}
	opc, modrm := code[p], code[p+1]
	if modrm < 0xc0 { // memory form: only the memory operand is shown
		reg := modrm >> 3 & 7
		if syntax == GNU && (opc == 0xde || opc == 0xdf && reg <= 3) {
			// 16-bit integer operand: objdump says fiadds, filds, fistps...
			if m := f.mnemonic; strings.HasPrefix(m, "fi") && !strings.HasSuffix(m, "s") {
				f.mnemonic = m + "s"
			}
		}
		tbyte := (opc == 0xdb && (reg == 5 || reg == 7)) || (opc == 0xdf && (reg == 4 || reg == 6))
		kept := f.operands[:0]
		for _, o := range f.operands {
			if o.Kind == OperandMemory {
				if syntax == Intel && tbyte && intelSizeKeyword(o.Text) == "" {
					o.Text = "TBYTE PTR " + o.Text // m80 (fld, fstp, fbld, fbstp): x86asm gives no size
				}
				kept = append(kept, o)
			}
		}
		f.operands = kept
		return
	}
	switch {
	case opc == 0xd9 && modrm >= 0xe0, opc == 0xde && modrm == 0xd9, opc == 0xda && modrm == 0xe9,
		opc == 0xdb && modrm >= 0xe0 && modrm < 0xe8:
		f.operands = nil // fchs, fld1, fscale, fcompp, fnclex, ...
		return
	case opc == 0xdf && modrm >= 0xe0 && modrm < 0xe8:
		return // fnstsw %ax
	}
	sti, st := "st("+strconv.Itoa(int(modrm&7))+")", "st"
	if syntax == GNU {
		sti, st = "%"+sti, "%"+st
	}
	reg := func(t string) Operand { return Operand{Kind: OperandRegister, Text: t} }
	switch {
	case opc == 0xd9 && modrm < 0xd0, opc == 0xdd, opc == 0xd8 && modrm >= 0xd0 && modrm < 0xe0,
		opc == 0xdf && modrm < 0xc8:
		f.operands = []Operand{reg(sti)} // fld, fxch, ffree, fst, fstp, fucom(p), fcom(p), ffreep
	case (opc == 0xdc || opc == 0xde) == (syntax == Intel):
		f.operands = []Operand{reg(sti), reg(st)}
	default:
		f.operands = []Operand{reg(st), reg(sti)}
	}
}

// repIsPlain reports whether objdump calls an F3 prefix "rep" on op (the
// string moves); elsewhere it says "repz".
func repIsPlain(op x86asm.Op) bool {
	switch op {
	case x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ,
		x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ,
		x86asm.LODSB, x86asm.LODSW, x86asm.LODSD, x86asm.LODSQ,
		x86asm.INSB, x86asm.INSW, x86asm.INSD, x86asm.OUTSB, x86asm.OUTSW, x86asm.OUTSD:
		return true
	}
	return false
}

// rexWord spells a REX prefix byte the way objdump does: rex, rex.W, rex.WRXB.
func rexWord(b byte) string {
	w := "rex"
	if b&0x0f != 0 {
		w += "."
		for i, c := range "WRXB" {
			if b&(8>>i) != 0 {
				w += string(c)
			}
		}
	}
	return w
}
