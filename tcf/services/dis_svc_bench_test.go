package services

import (
	"debug/elf"
	"testing"
)

// BenchmarkDisassembleCode lists 64 KiB of libc's code (no symbols): the
// cost per byte of the Disassembly service's decoding and line building.
func BenchmarkDisassembleCode(b *testing.B) {
	f, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Skipf("no libc to disassemble: %v", err)
	}
	defer f.Close()
	text := f.Section(".text")
	if text == nil {
		b.Skip("libc has no .text")
	}
	code := make([]byte, 64<<10)
	if _, err := text.ReadAt(code, 0); err != nil {
		b.Fatal(err)
	}
	opts := DisassemblyOptions{OpcodeValue: true}
	name := func(uint64) string { return "" }
	b.SetBytes(int64(len(code)))
	b.ReportAllocs()
	for b.Loop() {
		lines := disassembleCode(code, text.Addr, text.Addr, text.Addr+uint64(len(code)), false, opts, name, "P1")
		if len(lines) == 0 {
			b.Fatal("no lines")
		}
	}
}

// BenchmarkFormatPrintf formats a typical dynamic-printf line.
func BenchmarkFormatPrintf(b *testing.B) {
	args := []printfArg{intArg(42), strArg("loop"), floatArg(2.5), intArg(0x7ffe1234)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := formatPrintf("step %d tag=%s ratio=%g at %p\n", args); err != nil {
			b.Fatal(err)
		}
	}
}
