package services

import (
	"errors"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/disasm"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// Disassembly lists the instructions of a range of a process's memory.
//
// Bytes are read through the target, which hides the agent's software
// breakpoints, so a planted int3 is never shown. x86 code has no alignment, so
// a listing that started at the requested address could begin in the middle
// of an instruction: decoding starts at the entry of the function that
// contains the address (as the symbols name it) and goes forward from there,
// so every line is a real instruction boundary; the listing starts at the
// instruction that contains the requested address, as the TCF specification
// and Eclipse's disassembly view expect (the C agent lists from the entry).
//
// Text is Intel syntax by default (the C agent's choice); the parameter
// "Syntax" ("GNU", "AT&T" or "Intel") selects, and getCapabilities lists one
// entry per syntax so a client can pass an entry back as the parameters.
//
// Each line's Instruction is a list of fields that, joined with spaces (as
// Eclipse's disassembly view joins them), read like objdump: the mnemonic,
// then for a direct branch the target as an Address field followed by its
// symbol ("<main+0x1f>"), otherwise the operands as one String field, and for
// RIP-relative operands objdump's "# 0x404028 <counter>" comment.

// ISA names as the C agent reports them.
const isaX8664 = "X86_64"

// Bounds of one disassemble request: the client's size, and how far before
// the requested address the enclosing function's entry may be for decoding to
// start there (beyond it, decoding starts at the address).
const (
	maxDisassemblySize = 1 << 20
	maxFunctionLeadIn  = 1 << 20
)

// disassemblySyntaxID is sonde's parameter (and capability) naming the syntax.
const disassemblySyntaxID = "Syntax"

// disassemblyCaps is one of getCapabilities' answers, in the order the
// replies have always had them (the keys' order).
type disassemblyCaps struct {
	ISA               string `json:"ISA"`
	OpcodeValue       bool   `json:"OpcodeValue"`
	PseudoInstruction bool   `json:"PseudoInstruction"`
	Simplified        bool   `json:"Simplified"`
	Syntax            string `json:"Syntax"` // disassemblySyntaxID
}

// DisassemblyOptions select what Disassemble produces.
type DisassemblyOptions struct {
	Syntax      disasm.Syntax
	OpcodeValue bool
}

// DisassemblyField is one field of a line's Instruction.
type DisassemblyField struct {
	Type         string  `json:"Type"`
	Text         string  `json:"Text,omitempty"`
	Value        *uint64 `json:"Value,omitempty"`
	AddressSpace string  `json:"AddressSpace,omitempty"`
}

// DisassemblyLine is one instruction of a listing.
type DisassemblyLine struct {
	Address     uint64             `json:"Address"`
	Size        int                `json:"Size"`
	Instruction []DisassemblyField `json:"Instruction"`
	OpcodeValue []byte             `json:"OpcodeValue,omitempty"`
}

// Text joins the fields the way Eclipse's disassembly view shows them.
func (l *DisassemblyLine) Text() string {
	parts := make([]string, 0, len(l.Instruction))
	for _, f := range l.Instruction {
		if f.Value != nil {
			parts = append(parts, "0x"+strconv.FormatUint(*f.Value, 16))
		} else {
			parts = append(parts, f.Text)
		}
	}
	return strings.Join(parts, " ")
}

// disassemblySvc is the Disassembly service's commands.
type disassemblySvc struct {
	a *Agent
}

// RegisterDisassembly adds the Disassembly service.
func (a *Agent) RegisterDisassembly() {
	ds := &disassemblySvc{a: a}
	svc := a.srv.Service("Disassembly")
	svc.Command("getCapabilities", ds.getCapabilities)
	svc.Command("disassemble", ds.disassemble)
}

func (ds *disassemblySvc) getCapabilities(c *tcf.Call) {
	a := ds.a
	// The context only matters for its ISA, and every process here is
	// x86-64; null asks about the agent, an unknown context is an error.
	args := c.Args()
	id := args.String()
	err := args.End()
	if err == nil && id != "" {
		_, err = a.lookup(id)
	}
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	caps := []disassemblyCaps{
		{ISA: isaX8664, OpcodeValue: true, Syntax: "Intel"},
		{ISA: isaX8664, OpcodeValue: true, Syntax: "GNU"},
	}
	c.Reply().Error(nil).Data(caps).Send()
}

func (ds *disassemblySvc) disassemble(c *tcf.Call) {
	a := ds.a
	args := c.Args()
	id := args.String()
	addr := args.Uint64()
	size := args.Int64()
	var params tcf.Props
	if args.Remaining() > 0 {
		params = args.Props()
	}
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	opts, err := disassemblyParams(params)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ctx, err := a.lookup(id)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	lines, err := a.Disassemble(ctx, addr, size, opts)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(lines).Send()
}

// disassemblyParams reads the disassemble command's parameters.
func disassemblyParams(p tcf.Props) (DisassemblyOptions, error) {
	opts := DisassemblyOptions{Syntax: disasm.Intel}
	if isa, ok := p.String("ISA"); ok && isa != "" && isa != isaX8664 && !strings.EqualFold(isa, "x86-64") && !strings.EqualFold(isa, "amd64") {
		return opts, tcf.Errorf(tcf.CodeUnsupported, "ISA %q is not supported (only %s)", isa, isaX8664)
	}
	if s, ok := p.String(disassemblySyntaxID); ok && s != "" {
		switch strings.ToLower(s) {
		case "intel":
			opts.Syntax = disasm.Intel
		case "gnu", "at&t", "att":
			opts.Syntax = disasm.GNU
		default:
			return opts, tcf.Errorf(tcf.CodeUnsupported, "unknown syntax %q (GNU or Intel)", s)
		}
	}
	opts.OpcodeValue, _ = p.Bool("OpcodeValue")
	return opts, nil
}

// Disassemble lists the instructions that cover [addr, addr+size) in ctx's
// process (size 0 lists one instruction), from the one that contains addr.
func (a *Agent) Disassemble(ctx *target.Context, addr uint64, size int64, opts DisassemblyOptions) ([]DisassemblyLine, error) {
	proc := ctx.Process()
	if size < 0 || size > maxDisassemblySize {
		return nil, tcf.Errorf(tcf.CodeInvalidAddress, "disassembly size %d out of range (0..%d)", size, maxDisassemblySize)
	}
	if size == 0 {
		size = 1
	}
	end := addr + uint64(size)
	if end < addr {
		end = ^uint64(0)
	}
	names := newBranchNamer(a, proc)
	start := addr
	if entry, ok := names.entry(addr); ok && entry <= addr && addr-entry <= maxFunctionLeadIn {
		start = entry
	}
	// The last instruction may run up to 14 bytes past end.
	want := end - start + disasm.MaxInstructionLen - 1
	if end-start > want { // wrapped
		want = end - start
	}
	code := make([]byte, want)
	n, rerr := proc.ReadMemory(start, code)
	if n < int(addr-start)+1 {
		if rerr == nil {
			rerr = errors.New("short read")
		}
		var coder interface{ TCFCode() int }
		if !errors.As(rerr, &coder) {
			rerr = target.Errorf(target.CodeInvalidAddress, "read code", proc.ID(), rerr)
		}
		return nil, rerr
	}
	short := n < len(code)
	return disassembleCode(code[:n], start, addr, end, short, opts, names.name, string(proc.ID())), nil
}

// disassembleCode lists the instructions of code (which lives at start) from
// the one that contains addr to the last one that starts before end. short
// says the code was cut by unreadable memory, so a final instruction that
// does not decode is not shown. name names branch targets; space is the
// AddressSpace of Address fields.
func disassembleCode(code []byte, start, addr, end uint64, short bool, opts DisassemblyOptions, name func(uint64) string, space string) []DisassemblyLine {
	out := []DisassemblyLine{}
	pc := start
	for off := 0; off < len(code) && pc < end; {
		in, err := disasm.Decode(code[off:], pc)
		if err != nil && (errors.Is(err, disasm.ErrEmpty) || short && len(code)-off < disasm.MaxInstructionLen) {
			break // cut short by unreadable memory: not a real instruction
		}
		if in.Next() > addr {
			out = append(out, disassemblyLine(&in, opts, name, space))
		}
		off += in.Len
		pc += uint64(in.Len)
		if pc < start { // wrapped past the top of the address space
			break
		}
	}
	return out
}

// disassemblyLine formats one instruction as its protocol line.
func disassemblyLine(in *disasm.Instruction, opts DisassemblyOptions, name func(uint64) string, space string) DisassemblyLine {
	line := DisassemblyLine{Address: in.Address, Size: in.Len}
	if opts.OpcodeValue {
		line.OpcodeValue = append([]byte(nil), in.Bytes...)
	}
	fields := []DisassemblyField{{Type: "String", Text: in.Mnemonic(opts.Syntax)}}
	ops := in.Operands(opts.Syntax)
	if len(ops) == 1 && ops[0].Kind == disasm.OperandAddress {
		v := ops[0].Value
		fields = append(fields, DisassemblyField{Type: "Address", Value: &v, AddressSpace: space})
		if s := name(v); s != "" {
			fields = append(fields, DisassemblyField{Type: "String", Text: "<" + s + ">"})
		}
	} else if len(ops) > 0 {
		texts := make([]string, len(ops))
		for i, op := range ops {
			texts[i] = op.Text
			if op.Kind == disasm.OperandAddress {
				if s := name(op.Value); s != "" {
					texts[i] += " <" + s + ">"
				}
			}
		}
		fields = append(fields, DisassemblyField{Type: "String", Text: strings.Join(texts, ",")})
	}
	if mem, ok := in.MemoryTarget(); ok {
		comment := "# 0x" + strconv.FormatUint(mem, 16)
		if s := name(mem); s != "" {
			comment += " <" + s + ">"
		}
		fields = append(fields, DisassemblyField{Type: "String", Text: comment})
	}
	line.Instruction = fields
	return line
}

// branchNamer names addresses as function+offset through the session,
// remembering answers for one request.
type branchNamer struct {
	a     *Agent
	proc  *target.Context
	cache map[uint64]symbolAt
}

type symbolAt struct {
	name  string
	entry uint64
	ok    bool
}

func newBranchNamer(a *Agent, proc *target.Context) *branchNamer {
	return &branchNamer{a: a, proc: proc, cache: map[uint64]symbolAt{}}
}

func (b *branchNamer) lookup(addr uint64) symbolAt {
	if s, ok := b.cache[addr]; ok {
		return s
	}
	var s symbolAt
	if len(b.cache) < 4096 {
		defer func() { b.cache[addr] = s }()
	}
	if b.a.session == nil {
		return s
	}
	_, frames, err := b.a.session.Symbolize(b.proc, addr, false)
	if err != nil || len(frames) == 0 {
		return s
	}
	f := frames[len(frames)-1] // the function itself, not an inlined call in it
	if f.Function == "" || f.Start > addr {
		return s
	}
	s = symbolAt{name: f.Function, entry: f.Start, ok: true}
	return s
}

// entry is the start of the function (code range) containing addr.
func (b *branchNamer) entry(addr uint64) (uint64, bool) {
	s := b.lookup(addr)
	return s.entry, s.ok
}

// name is "func" or "func+0x1f" for addr, "" when nothing names it.
func (b *branchNamer) name(addr uint64) string {
	s := b.lookup(addr)
	if !s.ok {
		return ""
	}
	if addr == s.entry {
		return s.name
	}
	return s.name + "+0x" + strconv.FormatUint(addr-s.entry, 16)
}
