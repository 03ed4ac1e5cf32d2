package disasm

import (
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// x86asm's GNU syntax imitates an older libopcodes (callq, retq, movsxd) and
// its Intel syntax differs from objdump's (jz, cmovz, no movabs). The
// adjustments here bring both to what current objdump prints; each one was
// found by the objdump comparison in objdump_test.go, which keeps checking them.

// gnuMnemonics renames x86asm's GNU mnemonics to objdump's.
var gnuMnemonics = map[string]string{
	"callq": "call", "jmpq": "jmp", "retq": "ret", "leaveq": "leave",
	"pushq": "push", "popq": "pop", "xbeginq": "xbegin", "lretq": "lret",
	"pushfq": "pushf", "popfq": "popf", "enterq": "enter", "lcallq": "lcall", "ljmpq": "ljmp",
	"icebp": "int1", "cdqe": "cltq", "cwde": "cwtl", "cdq": "cltd",
	"cqo": "cqto", "cbw": "cbtw", "cwd": "cwtd",
}

// Register-only BMI instructions: objdump shows no operand-size suffix because
// the registers give the size.
var bmiNoSuffix = map[string]bool{
	"sarx": true, "shlx": true, "shrx": true, "bzhi": true, "blsmsk": true, "blsr": true,
	"blsi": true, "andn": true, "pdep": true, "pext": true, "mulx": true, "rorx": true, "bextr": true,
}

// intelConditions respells condition codes the way objdump's Intel syntax does.
var intelConditions = map[string]string{
	"z": "e", "nz": "ne", "nb": "ae", "nbe": "a", "nl": "ge", "nle": "g",
}

// vpcmpPredicates are objdump's names for the AVX-512 integer compare
// predicates (imm8 0..7): vpcmpub $0x1 is vpcmpltub.
var vpcmpPredicates = [8]string{"eq", "lt", "le", "false", "neq", "nlt", "nle", "true"}

// adjust rewrites the mnemonic and operands of a decoded instruction.
func (in *Instruction) adjust(syntax Syntax, f *formatted) {
	op := in.inst.Op
	words := strings.Fields(f.mnemonic)
	if len(words) == 0 {
		return
	}
	prefixes, mnem := words[:len(words)-1], words[len(words)-1]
	code := in.Bytes[in.lead:] // what x86asm decoded
	p := legacyPrefixLen(code)
	if in.rename != "" {
		mnem = in.rename
	}
	if mnem == "icebp" {
		mnem = "int1"
	}

	// 66 90 is "xchg %ax,%ax" to objdump (x86asm: "data16 nop").
	if len(code) == 2 && code[0] == 0x66 && code[1] == 0x90 {
		ax := "ax"
		if syntax == GNU {
			ax = "%ax"
		}
		f.mnemonic = "xchg"
		f.operands = []Operand{{Kind: OperandRegister, Text: ax}, {Kind: OperandRegister, Text: ax}}
		return
	}

	if syntax == GNU {
		if mnem == "movsxd" && in.inst.DataSize == 64 {
			mnem = "movslq" // objdump keeps movsxd for the 32-bit form
		}
		if r, ok := gnuMnemonics[mnem]; ok {
			mnem = r
		} else if n := len(mnem); n > 1 && (mnem[n-1] == 'l' || mnem[n-1] == 'q') && bmiNoSuffix[mnem[:n-1]] {
			mnem = mnem[:n-1]
		}
	} else {
		for _, stem := range []string{"j", "set", "cmov"} {
			if strings.HasPrefix(mnem, stem) {
				if r, ok := intelConditions[mnem[len(stem):]]; ok {
					mnem = stem + r
				}
				break
			}
		}
	}

	// movabs: mov with a 64-bit immediate (REX.W B8+r) or a 64-bit absolute
	// address (A0-A3).
	if op == x86asm.MOV && p < len(code) {
		b := code[p:]
		if len(b) > 1 && b[0]&0xf8 == 0x48 && b[1]&0xf8 == 0xb8 || b[0] >= 0xa0 && b[0] <= 0xa3 ||
			len(b) > 1 && b[0]&0xf0 == 0x40 && b[1] >= 0xa0 && b[1] <= 0xa3 {
			mnem = "movabs"
		}
	}

	// AVX-512 integer compares with a predicate immediate get objdump's
	// pseudo-op names, and the immediate is dropped.
	switch op {
	case x86asm.VPCMPB, x86asm.VPCMPUB, x86asm.VPCMPW, x86asm.VPCMPUW,
		x86asm.VPCMPD, x86asm.VPCMPUD, x86asm.VPCMPQ, x86asm.VPCMPUQ:
		immAt := len(f.operands) - 1
		if syntax == GNU {
			immAt = 0
		}
		if immAt >= 0 && f.operands[immAt].Kind == OperandImmediate && f.operands[immAt].Value < 8 {
			mnem = "vpcmp" + vpcmpPredicates[f.operands[immAt].Value] + mnem[len("vpcmp"):]
			f.operands = append(f.operands[:immAt], f.operands[immAt+1:]...)
		}
	}

	// pclmulqdq with a selector immediate: objdump's pseudo-ops.
	if op == x86asm.PCLMULQDQ || op == x86asm.VPCLMULQDQ {
		immAt := len(f.operands) - 1
		if syntax == GNU {
			immAt = 0
		}
		if immAt >= 0 && f.operands[immAt].Kind == OperandImmediate {
			if name, ok := pclmulNames[f.operands[immAt].Value]; ok {
				mnem = strings.TrimSuffix(mnem, "pclmulqdq") + name
				f.operands = append(f.operands[:immAt], f.operands[immAt+1:]...)
			}
		}
	}

	// Prefix words.
	for i, w := range prefixes {
		switch {
		case w == "repn":
			prefixes[i] = "repnz"
		case w == "rep" && op != x86asm.RET && !repIsPlain(op):
			prefixes[i] = "repz"
		case w == "data32":
			prefixes[i] = "data16" // x86asm repeats libopcodes' old 32-bit spelling
		case w == "rep" && (op == x86asm.RET):
			prefixes[i] = "repz"
		case w == "ds" && (op == x86asm.CALL || op == x86asm.JMP):
			prefixes[i] = "notrack" // CET: 3E on an indirect branch
		}
	}
	if (op == x86asm.CALL || op == x86asm.JMP) && p > 0 && code[p-1] == 0x3e && !contains(prefixes, "notrack") {
		prefixes = append(prefixes, "notrack")
	}
	if op == x86asm.RET && p > 0 && code[p-1] == 0xf3 && !contains(prefixes, "repz") {
		prefixes = append(prefixes, "repz")
	}
	if op == x86asm.NOP {
		// Multi-byte NOP padding (66 66 2E 0F 1F 84 ...): objdump shows every
		// prefix but the operand-size one as a word, in byte order.
		prefixes = nopPrefixWords(code[:p])
	}

	// Operands.
	isString := isStringOp(op)
	enc := modrmInfo{}
	haveEnc := false
	for i := range f.operands {
		o := &f.operands[i]
		switch o.Kind {
		case OperandImmediate:
			in.adjustImmediate(syntax, o)
		case OperandRegister, OperandMemory:
			o.Text = strings.ReplaceAll(o.Text, " {", "{") // AVX-512 masks: %k1{%k2}{z}
		}
		if o.Kind != OperandMemory || !o.hasMem || isString {
			continue
		}
		if !haveEnc {
			enc, haveEnc = addressing(code), true
		}
		if op != x86asm.NOP {
			prefixes = appendSegmentWords(prefixes, code[:p])
		}
		suffix := ""
		if k := strings.IndexByte(o.Text, '{'); k >= 0 && !strings.HasPrefix(o.Text, "{") {
			suffix = o.Text[k:] // an AVX-512 broadcast {1to8} stays
		}
		star := ""
		if strings.HasPrefix(o.Text, "*") {
			star = "*"
		}
		o.Text = star + memoryText(syntax, o.mem, enc, intelSizeKeyword(o.Text)) + suffix
	}

	if syntax == Intel {
		switch {
		case op == x86asm.NOP && len(f.operands) == 2:
			f.operands = f.operands[:1] // 0F 1F /r: the reg field is not an operand
		case isString:
			mnem = in.intelString(mnem, f)
		case op == x86asm.LRET:
			mnem = "retf"
			if len(f.operands) > 0 && f.operands[0].Text == "far" {
				f.operands = f.operands[1:]
			}
		case mnem == "iretd" || mnem == "popfq" || mnem == "pushfq":
			mnem = mnem[:len(mnem)-1]
		case op == x86asm.CMPSS || op == x86asm.CMPSD_XMM || op == x86asm.CMPPS || op == x86asm.CMPPD:
			if n := len(f.operands); n > 0 && f.operands[n-1].Kind == OperandImmediate && f.operands[n-1].Value < 8 {
				suffix := map[x86asm.Op]string{x86asm.CMPSS: "ss", x86asm.CMPSD_XMM: "sd", x86asm.CMPPS: "ps", x86asm.CMPPD: "pd"}[op]
				mnem = "cmp" + ssePredicates[f.operands[n-1].Value] + suffix
				f.operands = f.operands[:n-1]
			}
		case isPrefetch(op):
			for i := range f.operands {
				if f.operands[i].Kind == OperandMemory {
					f.operands[i].Text = "BYTE PTR " + strings.TrimPrefix(f.operands[i].Text, intelSizeKeyword(f.operands[i].Text))
				}
			}
		case p < len(code) && (code[p]&0xfe == 0xd0 || p+1 < len(code) && code[p]&0xf0 == 0x40 && code[p+1]&0xfe == 0xd0):
			// Shift or rotate by one (D0/D1): objdump writes the count as "1".
			if n := len(f.operands); n == 2 && f.operands[1].Text == "0x1" {
				f.operands[1].Text = "1"
			}
		}
	}
	if syntax == Intel && p > 0 && op != x86asm.NOP {
		// x86asm's Intel syntax drops prefixes its GNU syntax shows (and
		// objdump shows in both): take the prefix words from the GNU rendering.
		if g := strings.Fields(in.format(GNU).mnemonic); len(g) > 0 {
			prefixes = g[:len(g)-1]
		}
	}
	f.mnemonic = strings.Join(append(prefixes, mnem), " ")
	in.adjustX87(syntax, f)
}

// adjustImmediate prints an immediate as objdump does: unsigned, in the width
// of the operation (`$0xffffffff` where x86asm prints `$-0x1`).
func (in *Instruction) adjustImmediate(syntax Syntax, o *Operand) {
	if !o.HasValue || int64(o.Value) >= 0 {
		return
	}
	bits := in.inst.DataSize
	if in.inst.Op == x86asm.PUSH {
		bits = 64 // push imm8/imm32 pushes the sign-extended 64-bit value
	} else if in.inst.MemBytes == 1 || in.hasByteRegister() {
		bits = 8
	}
	v := o.Value
	if bits < 64 && bits > 0 {
		v &= 1<<uint(bits) - 1
	}
	o.Text = "0x" + strconv.FormatUint(v, 16)
	if syntax == GNU {
		o.Text = "$" + o.Text
	}
}

func (in *Instruction) hasByteRegister() bool {
	for _, a := range in.inst.Args {
		if r, ok := a.(x86asm.Reg); ok && (r >= x86asm.AL && r <= x86asm.R15B) {
			return true
		}
	}
	return false
}

// intelSizeKeyword returns the "DWORD PTR " part of an Intel memory operand,
// or "" (x86asm writes a bare "ptr" for lea, which objdump omits).
func intelSizeKeyword(text string) string {
	k := strings.Index(text, "PTR ")
	if k <= 0 {
		return ""
	}
	return text[:k+4]
}

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
	di, si := kw+"es:[rdi]", kw+"ds:[rsi]"
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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

// pclmulNames are objdump's names for pclmulqdq's selector immediates.
var pclmulNames = map[uint64]string{0x00: "pclmullqlqdq", 0x01: "pclmulhqlqdq", 0x10: "pclmullqhqdq", 0x11: "pclmulhqhqdq"}

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

// ssePredicates are the names of cmpss/cmpsd/cmpps/cmppd's predicate
// immediates (0..7).
var ssePredicates = [8]string{"eq", "lt", "le", "unord", "neq", "nlt", "nle", "ord"}
