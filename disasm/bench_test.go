package disasm

import (
	"debug/elf"
	"os/exec"
	"sync"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// The benchmarks sweep linearly through libc's .text, one instruction per
// iteration (wrapping at the end), so ns/op is nanoseconds per instruction over
// a realistic mix. Results and the command are in BENCHMARKS.md.

const libcPath = "/lib/x86_64-linux-gnu/libc.so.6"

var libcText = sync.OnceValues(func() ([]byte, error) {
	f, err := elf.Open(libcPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := f.Section(".text")
	if s == nil {
		return nil, &elf.FormatError{}
	}
	return s.Data()
})

func benchCode(b *testing.B) []byte {
	code, err := libcText()
	if err != nil {
		b.Skipf("libc's .text is not readable here: %v", err)
	}
	return code
}

// sweep calls fn for b.N consecutive instructions.
func sweep(b *testing.B, fn func(code []byte, addr uint64) int) {
	code := benchCode(b)
	b.ResetTimer()
	off := 0
	for i := 0; i < b.N; i++ {
		if off >= len(code) {
			off = 0
		}
		off += fn(code[off:], 0x26000+uint64(off))
	}
}

func BenchmarkDecode(b *testing.B) {
	sweep(b, func(code []byte, addr uint64) int {
		in, _ := Decode(code, addr)
		return in.Len
	})
}

// BenchmarkX86asmDecode is the bare x86asm decoder, for comparison.
func BenchmarkX86asmDecode(b *testing.B) {
	sweep(b, func(code []byte, addr uint64) int {
		inst, err := x86asm.Decode(code, 64)
		if err != nil || inst.Len == 0 {
			return 1
		}
		return inst.Len
	})
}

func BenchmarkDecodeTextGNU(b *testing.B) {
	sweep(b, func(code []byte, addr uint64) int {
		in, _ := Decode(code, addr)
		_ = in.Text(GNU, nil)
		return in.Len
	})
}

func BenchmarkDecodeTextIntel(b *testing.B) {
	sweep(b, func(code []byte, addr uint64) int {
		in, _ := Decode(code, addr)
		_ = in.Text(Intel, nil)
		return in.Len
	})
}

func BenchmarkDecodeTextGNUSymbolized(b *testing.B) {
	sweep(b, func(code []byte, addr uint64) int {
		in, _ := Decode(code, addr)
		_ = in.Text(GNU, symbols)
		return in.Len
	})
}

func BenchmarkDecodeOperandsIntel(b *testing.B) {
	sweep(b, func(code []byte, addr uint64) int {
		in, _ := Decode(code, addr)
		_ = in.Operands(Intel)
		return in.Len
	})
}

// BenchmarkX86asmGNUSyntax is x86asm's own decode + GNU formatting.
func BenchmarkX86asmGNUSyntax(b *testing.B) {
	sweep(b, func(code []byte, addr uint64) int {
		inst, err := x86asm.Decode(code, 64)
		if err != nil || inst.Len == 0 {
			return 1
		}
		_ = x86asm.GNUSyntax(inst, addr, nil)
		return inst.Len
	})
}

// BenchmarkListFrom lists a 4 KiB function from an address 2 KiB in (the
// TCF Disassembly case: decode lengths from the entry, then the listing).
func BenchmarkListFrom(b *testing.B) {
	code := benchCode(b)[0x10000 : 0x10000+4096]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ListFrom(code, 0x36000, 0x36800); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkObjdumpReference runs `objdump -d` over libc's .text, for the
// per-instruction cost of the tool users would otherwise call (process start
// and symbol annotation included). Its ns/insn metric is the one to compare.
func BenchmarkObjdumpReference(b *testing.B) {
	if _, err := exec.LookPath("objdump"); err != nil {
		b.Skip("objdump not installed")
	}
	insns := len(runObjdump(b, libcPath, GNU))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := exec.Command("objdump", "-d", "-j", ".text", libcPath).Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(insns), "ns/insn")
}
