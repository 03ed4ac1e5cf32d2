package disasm

import (
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// OperandKind classifies an operand the way the TCF Disassembly service types
// the fields of an instruction (Register, Immediate, Address, Displacement,
// String).
type OperandKind uint8

const (
	// OperandText is anything else, shown as text (rounding modes such as
	// {rn-sae}, and operands this package cannot classify).
	OperandText OperandKind = iota
	// OperandRegister is a register, possibly indirect (`*%rax` in GNU syntax)
	// or with an AVX-512 mask (`%zmm0{%k1}`).
	OperandRegister
	// OperandImmediate is a constant; Value holds it (sign-extended to 64 bits).
	OperandImmediate
	// OperandAddress is the target of a direct branch or call; Value holds it.
	OperandAddress
	// OperandMemory is a memory reference; Displacement and the register fields
	// describe it, and Value holds the absolute address when it is known
	// statically (RIP-relative or absolute).
	OperandMemory
)

var operandKindNames = [...]string{"text", "register", "immediate", "address", "memory"}

func (k OperandKind) String() string {
	if int(k) < len(operandKindNames) {
		return operandKindNames[k]
	}
	return "OperandKind(?)"
}

// Operand is one operand of a formatted instruction.
type Operand struct {
	Kind OperandKind
	// Text is the operand as the syntax shows it, without symbol annotation:
	// `%rbp`, `$0x1`, `0x401136`, `-0x14(%rbp)`, `DWORD PTR [rbp-0x14]`.
	Text string
	// Value: the immediate, the branch target, or a memory operand's static
	// address (HasValue says whether a memory operand has one).
	Value    uint64
	HasValue bool
	// Memory operands: the components as x86asm decoded them (register names
	// in lower case without %, empty when absent; Scale is 0 without index).
	Segment, Base, Index string
	Scale                uint8
	Displacement         int64

	memArg int8 // 1 + index of the decoded memory argument in the x86asm.Inst; 0: none
}

// Operands returns the instruction's operands in the order the syntax shows
// them (destination last in GNU syntax, first in Intel syntax). Implicit
// operands the syntax does not show are not included.
func (in *Instruction) Operands(syntax Syntax) []Operand { return in.format(syntax).operands }

// knownPrefixes are the words x86asm may print before a mnemonic.
var knownPrefixes = map[string]bool{
	"lock": true, "rep": true, "repn": true, "repne": true, "repz": true, "repnz": true, "repe": true,
	"data16": true, "data32": true, "addr16": true, "addr32": true,
	"cs": true, "ds": true, "es": true, "fs": true, "gs": true, "ss": true,
	"bnd": true, "notrack": true, "xacquire": true, "xrelease": true, "rex": true,
}

func isPrefixWord(w string) bool {
	return knownPrefixes[w] || strings.HasPrefix(w, "rex.")
}

// split turns x86asm's text into mnemonic and classified operands, then
// brings them to objdump's spelling.
func (in *Instruction) split(syntax Syntax, text string) formatted {
	// x86asm prints "prefix... mnemonic operands": prefixes and the mnemonic
	// are single words, and operands follow the first space after the mnemonic.
	end := len(text)
	for pos := 0; ; {
		sp := strings.IndexByte(text[pos:], ' ')
		if sp < 0 {
			break // no operands
		}
		word := text[pos : pos+sp]
		pos += sp + 1
		if !isPrefixWord(word) {
			end = pos - 1
			break
		}
	}
	f := formatted{mnemonic: text[:end]}
	if end < len(text) {
		args := splitOperands(text[end+1:])
		f.operands = make([]Operand, len(args))
		for i, a := range args {
			if syntax == Intel {
				a = upperSizes(a)
			}
			f.operands[i].Text = a
		}
		in.classify(syntax, f.operands)
	}
	in.adjust(syntax, &f)
	return f
}

// splitOperands splits an operand list at the commas outside parentheses,
// brackets and braces (GNU memory operands contain commas).
func splitOperands(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if last := strings.TrimSpace(s[start:]); last != "" || len(out) > 0 {
		out = append(out, last)
	}
	return out
}

// upperSizes spells memory-size keywords the way objdump's Intel syntax does
// ("DWORD PTR" rather than x86asm's "dword ptr").
func upperSizes(s string) string {
	if !strings.Contains(s, " ptr") {
		return s
	}
	words := strings.Split(s, " ")
	for i, w := range words {
		switch w {
		case "byte", "word", "dword", "qword", "tword", "xmmword", "ymmword", "zmmword", "fword", "oword", "ptr":
			words[i] = strings.ToUpper(w)
		}
	}
	return strings.Join(words, " ")
}

// classify fills in kinds and values. Memory components come from x86asm's
// arguments, matched to the text in order (x86asm's arguments are in Intel
// order; GNU syntax reverses them).
func (in *Instruction) classify(syntax Syntax, ops []Operand) {
	if target, ok := in.BranchTarget(); ok && len(ops) == 1 {
		ops[0].Kind = OperandAddress
		ops[0].Value = target
		ops[0].HasValue = true
		ops[0].Text = "0x" + strconv.FormatUint(target, 16)
		return
	}
	var memBuf [4]int8 // indexes of the memory arguments in in.inst.Args
	mems := memBuf[:0]
	for k, a := range in.inst.Args {
		if a == nil {
			break
		}
		if _, ok := a.(x86asm.Mem); ok && len(mems) < len(memBuf) {
			mems = append(mems, int8(k))
		}
	}
	var memOpBuf [4]int
	memOps := memOpBuf[:0]
	for i := range ops {
		ops[i].Kind = operandKind(syntax, ops[i].Text)
		switch ops[i].Kind {
		case OperandImmediate:
			ops[i].Value, ops[i].HasValue = parseImmediate(ops[i].Text)
		case OperandMemory:
			memOps = append(memOps, i)
		}
	}
	if len(memOps) != len(mems) {
		return
	}
	for j, i := range memOps {
		k := mems[j]
		if syntax == GNU {
			k = mems[len(mems)-1-j]
		}
		m := in.inst.Args[k].(x86asm.Mem)
		op := &ops[i]
		op.memArg = k + 1
		op.Segment = regName(m.Segment)
		op.Base = regName(m.Base)
		op.Index = regName(m.Index)
		op.Scale = m.Scale
		if m.Index == 0 {
			op.Scale = 0
		}
		op.Displacement = m.Disp
		switch {
		case m.Base == x86asm.RIP:
			op.Value, op.HasValue = in.Next()+uint64(m.Disp), true
		case m.Base == 0 && m.Index == 0 && m.Segment == 0:
			op.Value, op.HasValue = uint64(m.Disp), true
		}
	}
}

// operandKind classifies one operand's text.
func operandKind(syntax Syntax, s string) OperandKind {
	if s == "" {
		return OperandMemory // x86asm prints the absolute address 0 as nothing
	}
	if s[0] == '{' {
		return OperandText // {sae}, {rn-sae}
	}
	if syntax == GNU {
		t := strings.TrimPrefix(s, "*")
		switch {
		case strings.HasPrefix(t, "%st("):
			return OperandRegister
		case strings.ContainsAny(t, "(:"):
			return OperandMemory
		case t[0] == '%':
			return OperandRegister
		case t[0] == '$':
			return OperandImmediate
		case t[0] >= '0' && t[0] <= '9', t[0] == '-':
			return OperandMemory // absolute address
		}
		return OperandText
	}
	switch {
	case strings.ContainsAny(s, "[:"):
		return OperandMemory
	case s[0] >= '0' && s[0] <= '9', s[0] == '-':
		return OperandImmediate
	case s[0] >= 'a' && s[0] <= 'z':
		return OperandRegister
	}
	return OperandText
}

// parseImmediate reads "$0x10", "0x10", "-0x1", "$-0x1", "3".
func parseImmediate(s string) (uint64, bool) {
	s = strings.TrimPrefix(s, "$")
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	base := 10
	if strings.HasPrefix(s, "0x") {
		s, base = s[2:], 16
	}
	v, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
