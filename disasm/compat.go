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

// rewrite holds one instruction's text while adjust brings it to objdump's.
type rewrite struct {
	in       *Instruction
	syntax   Syntax
	f        *formatted
	op       x86asm.Op
	code     []byte // the bytes x86asm decoded (without a merged fwait)
	p        int    // number of legacy prefix bytes in code
	prefixes []string
	mnem     string
}

// adjust rewrites the mnemonic and operands of a decoded instruction.
func (in *Instruction) adjust(syntax Syntax, f *formatted) {
	if f.mnemonic == "" {
		return
	}
	code := in.Bytes[in.lead:]
	r := rewrite{in: in, syntax: syntax, f: f, op: in.inst.Op, code: code, p: legacyPrefixLen(code), mnem: f.mnemonic}
	if strings.IndexByte(f.mnemonic, ' ') >= 0 { // prefix words
		words := strings.Fields(f.mnemonic)
		r.prefixes, r.mnem = words[:len(words)-1], words[len(words)-1]
	}
	if in.rename != "" {
		r.mnem = in.rename
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
	r.mnemonic()
	r.pseudoOps()
	r.prefixWords()
	r.operands()
	if syntax == Intel {
		r.intel()
	}
	f.mnemonic = r.mnem
	if len(r.prefixes) > 0 {
		f.mnemonic = strings.Join(r.prefixes, " ") + " " + r.mnem
	}
	in.adjustX87(syntax, f)
}

// mnemonic renames x86asm's mnemonics to objdump's.
func (r *rewrite) mnemonic() {
	if r.mnem == "icebp" {
		r.mnem = "int1"
	}
	if r.syntax == GNU {
		if r.mnem == "movsxd" && r.in.inst.DataSize == 64 {
			r.mnem = "movslq" // objdump keeps movsxd for the 32-bit form
		}
		if n, ok := gnuMnemonics[r.mnem]; ok {
			r.mnem = n
		} else if n := len(r.mnem); n > 1 && (r.mnem[n-1] == 'l' || r.mnem[n-1] == 'q') && bmiNoSuffix[r.mnem[:n-1]] {
			r.mnem = r.mnem[:n-1]
		}
	} else {
		for _, stem := range []string{"j", "set", "cmov"} {
			if strings.HasPrefix(r.mnem, stem) {
				if c, ok := intelConditions[r.mnem[len(stem):]]; ok {
					r.mnem = stem + c
				}
				break
			}
		}
	}
	// movabs: mov with a 64-bit immediate (REX.W B8+r) or a 64-bit absolute
	// address (A0-A3).
	if r.op == x86asm.MOV && r.p < len(r.code) {
		b := r.code[r.p:]
		if len(b) > 1 && b[0]&0xf8 == 0x48 && b[1]&0xf8 == 0xb8 || b[0] >= 0xa0 && b[0] <= 0xa3 ||
			len(b) > 1 && b[0]&0xf0 == 0x40 && b[1] >= 0xa0 && b[1] <= 0xa3 {
			r.mnem = "movabs"
		}
	}
}

// pseudoOps gives compares and carry-less multiplies whose immediate selects
// a predicate objdump's pseudo-op names, and drops the immediate.
func (r *rewrite) pseudoOps() {
	if len(r.f.operands) == 0 {
		return
	}
	immAt := len(r.f.operands) - 1
	if r.syntax == GNU {
		immAt = 0
	}
	if r.f.operands[immAt].Kind != OperandImmediate {
		return
	}
	imm := r.f.operands[immAt].Value
	switch r.op {
	case x86asm.VPCMPB, x86asm.VPCMPUB, x86asm.VPCMPW, x86asm.VPCMPUW,
		x86asm.VPCMPD, x86asm.VPCMPUD, x86asm.VPCMPQ, x86asm.VPCMPUQ:
		if imm >= 8 || !strings.HasPrefix(r.mnem, "vpcmp") {
			return
		}
		r.mnem = "vpcmp" + vpcmpPredicates[imm] + r.mnem[len("vpcmp"):]
	case x86asm.PCLMULQDQ, x86asm.VPCLMULQDQ:
		name, ok := pclmulNames[imm]
		if !ok {
			return
		}
		r.mnem = strings.TrimSuffix(r.mnem, "pclmulqdq") + name
	case x86asm.CMPSS, x86asm.CMPSD_XMM, x86asm.CMPPS, x86asm.CMPPD:
		if r.syntax == GNU || imm >= 8 { // x86asm's GNU syntax already does it
			return
		}
		suffix := map[x86asm.Op]string{x86asm.CMPSS: "ss", x86asm.CMPSD_XMM: "sd", x86asm.CMPPS: "ps", x86asm.CMPPD: "pd"}[r.op]
		r.mnem = "cmp" + ssePredicates[imm] + suffix
	default:
		return
	}
	r.f.operands = append(r.f.operands[:immAt], r.f.operands[immAt+1:]...)
}

// prefixWords spells the prefixes objdump's way.
func (r *rewrite) prefixWords() {
	op, code, p := r.op, r.code, r.p
	for i, w := range r.prefixes {
		switch {
		case w == "repn":
			r.prefixes[i] = "repnz"
		case w == "rep" && !repIsPlain(op):
			r.prefixes[i] = "repz"
		case w == "data32":
			r.prefixes[i] = "data16" // x86asm repeats libopcodes' old 32-bit spelling
		case w == "ds" && (op == x86asm.CALL || op == x86asm.JMP):
			r.prefixes[i] = "notrack" // CET: 3E on an indirect branch
		}
	}
	if (op == x86asm.CALL || op == x86asm.JMP) && p > 0 && code[p-1] == 0x3e && !contains(r.prefixes, "notrack") {
		r.prefixes = append(r.prefixes, "notrack")
	}
	if op == x86asm.RET && p > 0 && code[p-1] == 0xf3 && !contains(r.prefixes, "repz") {
		r.prefixes = append(r.prefixes, "repz")
	}
	if _, direct := r.in.BranchTarget(); direct && p < len(code) && code[p]&0xf0 == 0x40 {
		// A REX prefix means nothing to a direct branch; objdump shows it, as
		// in the TLS sequence "data16 data16 rex.W call __tls_get_addr".
		r.prefixes = append(r.prefixes, rexWord(code[p]))
	}
	if op == x86asm.NOP {
		// Multi-byte NOP padding (66 66 2E 0F 1F 84 ...): objdump shows every
		// prefix but the operand-size one as a word, in byte order.
		r.prefixes = nopPrefixWords(code[:p])
	}
}

// operands re-renders immediates and memory operands, and joins AVX-512
// masks to their operand.
func (r *rewrite) operands() {
	switch r.op {
	case x86asm.VPMOVM2B, x86asm.VPMOVM2W, x86asm.VPMOVM2D, x86asm.VPMOVM2Q:
		// The k register is the source operand, not a write mask (x86asm
		// prints `%zmm23 {%k5}` for objdump's `%k5,%zmm23`).
		if len(r.f.operands) == 1 {
			if t := r.f.operands[0].Text; strings.HasSuffix(t, "}") {
				if k := strings.IndexByte(t, '{'); k > 0 {
					dst := Operand{Kind: OperandRegister, Text: strings.TrimSpace(t[:k])}
					src := Operand{Kind: OperandRegister, Text: t[k+1 : len(t)-1]}
					r.f.operands = []Operand{dst, src}
					if r.syntax == GNU {
						r.f.operands = []Operand{src, dst}
					}
				}
			}
		}
	}
	isString := isStringOp(r.op) || r.op == x86asm.XLATB
	var enc modrmInfo
	haveEnc := false
	for i := range r.f.operands {
		o := &r.f.operands[i]
		switch o.Kind {
		case OperandImmediate:
			r.in.adjustImmediate(r.syntax, o)
		case OperandRegister, OperandMemory:
			o.Text = strings.ReplaceAll(o.Text, " {", "{") // %k1{%k2}{z}
		}
		if o.Kind != OperandMemory || o.memArg == 0 || isString {
			continue // string instructions: x86asm's rendering is objdump's
		}
		if !haveEnc {
			enc, haveEnc = addressing(r.code), true
		}
		if r.op != x86asm.NOP {
			r.prefixes = appendSegmentWords(r.prefixes, r.code[:r.p])
		}
		suffix := ""
		if k := strings.IndexByte(o.Text, '{'); k >= 0 && !strings.HasPrefix(o.Text, "{") {
			suffix = o.Text[k:] // an AVX-512 broadcast {1to8} stays
		}
		star := ""
		if strings.HasPrefix(o.Text, "*") {
			star = "*"
		}
		o.Text = star + memoryText(r.syntax, r.in.inst.Args[o.memArg-1].(x86asm.Mem), enc, intelSizeKeyword(o.Text)) + suffix
	}
}

// intel applies what only objdump's Intel syntax needs.
func (r *rewrite) intel() {
	op, code, p, f := r.op, r.code, r.p, r.f
	switch {
	case op == x86asm.NOP && len(f.operands) == 2:
		f.operands = f.operands[:1] // 0F 1F /r: the reg field is not an operand
	case isStringOp(op):
		r.mnem = r.in.intelString(r.mnem, f)
	case op == x86asm.LRET:
		r.mnem = "retf"
		if len(f.operands) > 0 && f.operands[0].Text == "far" {
			f.operands = f.operands[1:]
		} else if len(f.operands) > 0 {
			f.operands[0].Text = strings.TrimPrefix(f.operands[0].Text, "far ")
		}
	case op == x86asm.XLATB:
		f.operands = []Operand{{Kind: OperandMemory, Text: "BYTE PTR ds:[rbx]"}}
	case r.mnem == "movabs":
		for i := range f.operands {
			if o := &f.operands[i]; o.Kind == OperandMemory {
				o.Text = strings.TrimPrefix(o.Text, intelSizeKeyword(o.Text)) // moffs: no size
			}
		}
	case r.mnem == "iretd" || r.mnem == "popfq" || r.mnem == "pushfq":
		r.mnem = r.mnem[:len(r.mnem)-1]
	case isPrefetch(op):
		for i := range f.operands {
			if o := &f.operands[i]; o.Kind == OperandMemory {
				o.Text = "BYTE PTR " + strings.TrimPrefix(o.Text, intelSizeKeyword(o.Text))
			}
		}
	case p < len(code) && (code[p]&0xfe == 0xd0 || p+1 < len(code) && code[p]&0xf0 == 0x40 && code[p+1]&0xfe == 0xd0):
		// Shift or rotate by one (D0/D1): objdump writes the count as "1".
		if n := len(f.operands); n == 2 && f.operands[1].Text == "0x1" {
			f.operands[1].Text = "1"
		}
	}
	for i := range f.operands {
		o := &f.operands[i]
		switch {
		case o.Kind == OperandMemory && strings.HasSuffix(o.Text, "}") && strings.Contains(o.Text, "{1to"):
			// EVEX broadcast: objdump writes `DWORD BCST [r9+0xc]`, not
			// `DWORD PTR [r9+0xc]{1to4}`.
			o.Text = strings.Replace(o.Text[:strings.LastIndex(o.Text, "{1to")], " PTR ", " BCST ", 1)
		case o.Kind == OperandRegister && strings.HasPrefix(o.Text, "mmx"):
			o.Text = "mm" + o.Text[3:] // MMX registers: mm2, not mmx2
		}
	}
	if p > 0 && op != x86asm.NOP {
		// x86asm's Intel syntax drops prefixes its GNU syntax shows (and
		// objdump shows in both): take the prefix words from the GNU rendering.
		r.prefixes = r.gnuPrefixes()
	}
}

// gnuPrefixes returns the prefix words of the instruction's GNU rendering
// (without formatting the whole instruction in GNU syntax, which would make
// formatting recursive).
func (r *rewrite) gnuPrefixes() []string {
	text := x86asm.GNUSyntax(r.in.inst, 0, nil)
	g := rewrite{in: r.in, syntax: GNU, f: &formatted{}, op: r.op, code: r.code, p: r.p}
	for pos := 0; ; {
		sp := strings.IndexByte(text[pos:], ' ')
		if sp < 0 || !isPrefixWord(text[pos:pos+sp]) {
			break
		}
		g.prefixes = append(g.prefixes, text[pos:pos+sp])
		pos += sp + 1
	}
	g.prefixWords()
	if r.op != x86asm.NOP && !isStringOp(r.op) {
		for _, a := range r.in.inst.Args {
			if _, isMem := a.(x86asm.Mem); isMem {
				g.prefixes = appendSegmentWords(g.prefixes, r.code[:r.p])
				break
			}
		}
	}
	return g.prefixes
}

// adjustImmediate prints an immediate as objdump does: unsigned, in the width
// of the operation (`$0xffffffff` where x86asm prints `$-0x1`).
func (in *Instruction) adjustImmediate(syntax Syntax, o *Operand) {
	if !o.HasValue {
		return
	}
	bits := in.inst.DataSize
	if in.inst.Op == x86asm.PUSH {
		// push imm8/imm32 pushes the sign-extended 64-bit value (x86asm keeps
		// some of them zero-extended).
		bits = 64
		code := in.Bytes[in.lead:]
		if p := legacyPrefixLen(code); p < len(code) {
			switch code[p] {
			case 0x68:
				o.Value = uint64(int64(int32(uint32(o.Value))))
			case 0x6a:
				o.Value = uint64(int64(int8(uint8(o.Value))))
			}
		}
	} else if in.inst.MemBytes == 1 || in.hasByteRegister() {
		bits = 8
	}
	if int64(o.Value) >= 0 {
		return
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pclmulNames are objdump's names for pclmulqdq's selector immediates.
var pclmulNames = map[uint64]string{0x00: "pclmullqlqdq", 0x01: "pclmulhqlqdq", 0x10: "pclmullqhqdq", 0x11: "pclmulhqhqdq"}

// ssePredicates are the names of cmpss/cmpsd/cmpps/cmppd's predicate
// immediates (0..7).
var ssePredicates = [8]string{"eq", "lt", "le", "unord", "neq", "nlt", "nle", "ord"}
