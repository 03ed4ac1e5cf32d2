package dap

import (
	"encoding/base64"
	"fmt"
	"strings"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/disasm"
)

// maxMemoryRead bounds one readMemory; maxDisassemble one disassemble.
const (
	maxMemoryRead  = 1 << 20
	maxDisassemble = 4096
)

func (s *Server) readMemory(r *request) (any, error) {
	var a godap.ReadMemoryArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	base, err := parseAddr(a.MemoryReference)
	if err != nil {
		return nil, err
	}
	if a.Count < 0 {
		return nil, errorf("readMemory: count %d is negative", a.Count)
	}
	addr := uint64(int64(base) + int64(a.Offset))
	buf := make([]byte, min(a.Count, maxMemoryRead))
	n, _ := d.proc.ReadMemory(addr, buf)
	body := godap.ReadMemoryResponseBody{Address: hexAddr(addr), Data: base64.StdEncoding.EncodeToString(buf[:n])}
	if n < a.Count {
		body.UnreadableBytes = a.Count - n
	}
	return body, nil
}

func (s *Server) writeMemory(r *request) (any, error) {
	var a godap.WriteMemoryArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	if d.core {
		return nil, errReadOnly
	}
	base, err := parseAddr(a.MemoryReference)
	if err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(a.Data)
	if err != nil {
		return nil, errorf("writeMemory: data is not base64: %v", err)
	}
	addr := uint64(int64(base) + int64(a.Offset))
	n, err := d.proc.WriteMemory(addr, data)
	if err != nil && (n == 0 || !a.AllowPartial) {
		return nil, errorf("writeMemory at 0x%x: %v", addr, err)
	}
	s.invalidateValues(d)
	if s.client.SupportsMemoryEvent {
		s.sendEvent("memory", godap.MemoryEventBody{MemoryReference: hexAddr(addr), Offset: 0, Count: n})
	}
	return godap.WriteMemoryResponseBody{Offset: 0, BytesWritten: n}, nil
}

// disassemble decodes instructionCount instructions around a reference:
// from instructionOffset instructions after it (before it, when negative:
// decoding starts at the function's entry when it is known, so that the
// instructions before are the real ones).
func (s *Server) disassemble(r *request) (any, error) {
	var a godap.DisassembleArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	base, err := parseAddr(a.MemoryReference)
	if err != nil {
		return nil, err
	}
	if a.InstructionCount <= 0 || a.InstructionCount > maxDisassemble {
		return nil, errorf("disassemble: instructionCount %d must be 1..%d", a.InstructionCount, maxDisassemble)
	}
	if a.InstructionOffset < -maxDisassemble || a.InstructionOffset > maxDisassemble {
		return nil, errorf("disassemble: instructionOffset %d is out of range", a.InstructionOffset)
	}
	addr := uint64(int64(base) + int64(a.Offset))
	// Decode from a start known to be an instruction boundary before addr.
	start := addr
	if a.InstructionOffset < 0 {
		back := uint64(-a.InstructionOffset) * 15
		start = addr - min(back, addr)
		if name, lo, _, err := d.sess.FunctionBounds(d.proc, addr); err == nil && name != "" && lo <= addr && addr-lo <= back+4096 {
			start = lo
		}
	}
	span := uint64(a.InstructionCount+max(a.InstructionOffset, 0)+1)*15 + (addr - start)
	code := make([]byte, span)
	n, _ := d.proc.ReadMemory(start, code)
	code = code[:n]
	var insns []disasm.Instruction
	for off := 0; off < len(code); {
		in, _ := disasm.Decode(code[off:], start+uint64(off))
		if in.Len <= 0 {
			break
		}
		insns = append(insns, in)
		off += in.Len
	}
	// Index of the instruction at (or containing) addr.
	at := 0
	for i, in := range insns {
		if in.Address <= addr && addr < in.Next() {
			at = i
			break
		}
	}
	first := at + a.InstructionOffset
	out := make([]godap.DisassembledInstruction, 0, a.InstructionCount)
	sym := s.disasmSymbolizer(d)
	lastLine, lastFile := 0, ""
	for i := first; len(out) < a.InstructionCount; i++ {
		if i < 0 || i >= len(insns) {
			// Past what could be decoded: the protocol wants the count.
			out = append(out, godap.DisassembledInstruction{Address: hexAddr(uint64(int64(addr) + int64(i-at))), Instruction: "??"})
			continue
		}
		in := insns[i]
		di := godap.DisassembledInstruction{Address: hexAddr(in.Address), InstructionBytes: spacedHex(in.Bytes),
			Instruction: in.Text(disasm.GNU, sym)}
		if _, frames, err := d.sess.Symbolize(d.proc, in.Address, false); err == nil && len(frames) > 0 {
			f := frames[0]
			if name := frames[len(frames)-1].Function; name != "" && frames[len(frames)-1].Start == in.Address {
				di.Symbol = name
			}
			if f.File != "" && f.Line > 0 && (f.Line != lastLine || f.File != lastFile) {
				di.Location = sourceOf(f.File)
				di.Line = f.Line
				lastLine, lastFile = f.Line, f.File
			}
		}
		out = append(out, di)
	}
	return godap.DisassembleResponseBody{Instructions: out}, nil
}

func (s *Server) disasmSymbolizer(d *debuggee) disasm.Symbolizer {
	return func(addr uint64) (string, uint64, bool) {
		name, lo, _, err := d.sess.FunctionBounds(d.proc, addr)
		if err != nil || name == "" {
			return "", 0, false
		}
		return name, addr - lo, true
	}
}

func spacedHex(b []byte) string {
	var sb strings.Builder
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%02x", c)
	}
	return sb.String()
}
