package disasm

import (
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// Syntax selects the assembler dialect of formatted text.
type Syntax uint8

const (
	// GNU is AT&T syntax as `objdump -d` prints it: `mov    %rsp,%rbp`.
	GNU Syntax = iota
	// Intel is Intel syntax as `objdump -d -M intel` prints it:
	// `mov    DWORD PTR [rbp-0x14],edi`.
	Intel
)

func (s Syntax) String() string {
	if s == Intel {
		return "intel"
	}
	return "gnu"
}

// Symbolizer names an address: the symbol containing it and the offset from
// the symbol's start. It is called for branch targets and RIP-relative operands;
// it returns ok=false for addresses it cannot name. A nil Symbolizer names
// nothing.
type Symbolizer func(addr uint64) (name string, offset uint64, ok bool)

// symbolText returns "name" or "name+0xoff" for addr, or "" when sym cannot
// name it.
func symbolText(sym Symbolizer, addr uint64) string {
	if sym == nil {
		return ""
	}
	name, off, ok := sym(addr)
	if !ok || name == "" {
		return ""
	}
	if off == 0 {
		return name
	}
	return name + "+0x" + strconv.FormatUint(off, 16)
}

// mnemonicWidth is the column objdump pads "prefixes mnemonic" to before the
// operands (i386-dis.c pads to 6 and adds a space).
const mnemonicWidth = 6

// Text formats the instruction the way objdump does in the given syntax:
// prefixes and mnemonic padded to 6 columns, a space, the operands separated by
// commas, branch targets as `0x401136 <foo+0x10>`, and RIP-relative memory
// operands followed by a `# 0x404028 <counter>` comment (8 spaces before the
// #, as objdump). Cosmetic differences from objdump: addresses in targets and
// comments carry a 0x prefix (as gdb prints them), and in Intel syntax a
// negative RIP-relative displacement is written `[rip-0x16e]` where objdump
// writes `[rip+0xfffffffffffffe92]`, and objdump's "{evex}" mark on EVEX
// encodings of instructions that also have a VEX form is not shown.
func (in *Instruction) Text(syntax Syntax, sym Symbolizer) string {
	f := in.format(syntax)
	var b strings.Builder
	b.Grow(48)
	b.WriteString(f.mnemonic)
	if len(f.operands) > 0 {
		for n := len(f.mnemonic); n < mnemonicWidth; n++ {
			b.WriteByte(' ')
		}
		b.WriteByte(' ')
		for i, op := range f.operands {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(op.Text)
			if op.Kind == OperandAddress {
				if s := symbolText(sym, op.Value); s != "" {
					b.WriteString(" <")
					b.WriteString(s)
					b.WriteByte('>')
				}
			}
		}
	}
	if addr, ok := in.MemoryTarget(); ok {
		b.WriteString("        # 0x")
		b.WriteString(strconv.FormatUint(addr, 16))
		if s := symbolText(sym, addr); s != "" {
			b.WriteString(" <")
			b.WriteString(s)
			b.WriteByte('>')
		}
	}
	return b.String()
}

// Mnemonic returns the instruction's prefixes and mnemonic as the syntax spells
// them, e.g. "mov", "lock cmpxchg", "rep stos", "cs nopw", ".byte".
func (in *Instruction) Mnemonic(syntax Syntax) string { return in.format(syntax).mnemonic }

// formatted is an instruction split into its mnemonic (with prefixes) and
// operands, in one syntax.
type formatted struct {
	mnemonic string
	operands []Operand
}

func (in *Instruction) format(syntax Syntax) formatted {
	switch in.Kind {
	case Bad:
		ops := make([]Operand, len(in.Bytes))
		for i, b := range in.Bytes {
			ops[i] = Operand{Kind: OperandImmediate, Text: "0x" + strconv.FormatUint(uint64(b), 16), Value: uint64(b), HasValue: true}
		}
		return formatted{mnemonic: ".byte", operands: ops}
	case Named:
		return formatted{mnemonic: in.named.name}
	}
	var text string
	// The address passed to x86asm only matters for PC-relative branches, which
	// are re-formatted below from BranchTarget; 0 keeps x86asm from calling a
	// symbol lookup.
	if syntax == Intel {
		text = x86asm.IntelSyntax(in.inst, 0, nil)
	} else {
		text = x86asm.GNUSyntax(in.inst, 0, nil)
	}
	return in.split(syntax, text)
}

// String returns the instruction in GNU syntax without symbols, for logs and
// %v.
func (in *Instruction) String() string { return in.Text(GNU, nil) }
