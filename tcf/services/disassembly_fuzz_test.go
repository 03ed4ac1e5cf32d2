package services

import (
	"testing"

	"github.com/sondedbg/sonde/disasm"
	"github.com/sondedbg/sonde/tcf"
)

// FuzzDisassembleCode feeds arbitrary bytes, addresses and parameters to the
// listing the Disassembly service builds: it must never panic, must cover the
// requested range with contiguous lines that start on the decoding's
// boundaries, and must never list a line past the range.
func FuzzDisassembleCode(f *testing.F) {
	f.Add([]byte{0x55, 0x48, 0x89, 0xe5, 0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3}, uint64(0x401000), uint16(3), uint16(10), false, "GNU")
	f.Add([]byte{0xc5, 0xf8, 0x77, 0xc3}, uint64(0x1000), uint16(0), uint16(4), true, "Intel")
	f.Add([]byte{0x8b, 0x05, 0x10, 0x20, 0x30, 0x40, 0x0f}, ^uint64(0)-4, uint16(1), uint16(30), true, "intel")
	f.Add([]byte{0xff, 0xff, 0xff}, uint64(0), uint16(2), uint16(1), false, "bogus")
	f.Fuzz(func(t *testing.T, code []byte, start uint64, lead, size uint16, short bool, syntax string) {
		opts, err := disassemblyParams(tcf.Props{"Syntax": syntax, "OpcodeValue": true})
		if err != nil {
			return
		}
		addr := start + uint64(lead)
		if addr < start {
			return
		}
		end := addr + uint64(size) + 1
		if end < addr {
			end = ^uint64(0)
		}
		name := func(a uint64) string {
			if a%2 == 0 {
				return "f"
			}
			return ""
		}
		lines := disassembleCode(code, start, addr, end, short, opts, name, "P1")
		var next uint64
		for i, l := range lines {
			if l.Size < 1 || l.Size > disasm.MaxInstructionLen || len(l.OpcodeValue) != l.Size || len(l.Instruction) == 0 {
				t.Fatalf("line %d: %+v", i, l)
			}
			if i > 0 && l.Address != next {
				t.Fatalf("line %d at 0x%x, previous ended at 0x%x", i, l.Address, next)
			}
			if l.Address >= end || l.Address+uint64(l.Size) <= addr && l.Address+uint64(l.Size) > l.Address {
				t.Fatalf("line %d at 0x%x outside [0x%x, 0x%x)", i, l.Address, addr, end)
			}
			_ = l.Text()
			next = l.Address + uint64(l.Size)
		}
	})
}
