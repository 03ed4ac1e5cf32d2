package core

import (
	"os"
	"syscall"
	"testing"
)

// benchCore makes a kernel core of core_target with bigMiB mebibytes of
// touched heap (coredump_filter 0x33).
func benchCore(b *testing.B, bigMiB int) string {
	b.Helper()
	requireFileCores(b)
	p := startTarget(b, buildTarget(b), bigMiB)
	p.allowCore(b, 0x33)
	core := p.killForCore(b, syscall.SIGQUIT, p.tids[0])
	st, err := os.Stat(core)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("core of %d MiB", st.Size()>>20)
	return core
}

// openAndReadRegisters is the operation the speed target names: open
// a core and read every thread's registers.
func openAndReadRegisters(b *testing.B, path string) {
	tg, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, th := range Of(tg).Process().Children() {
		if _, err := th.Registers(); err != nil {
			b.Fatal(err)
		}
	}
	tg.Close()
}

// BenchmarkOpen opens a kernel core of about 26 MiB (four threads' stacks)
// and reads its threads' registers.
func BenchmarkOpen(b *testing.B) {
	path := benchCore(b, 0)
	for b.Loop() {
		openAndReadRegisters(b, path)
	}
}

// BenchmarkOpen1GiB does the same with a 1 GiB core. Making the core writes
// 1 GiB, so it runs only with SONDE_CORE_BENCH=1:
//
//	SONDE_CORE_BENCH=1 go test -run XXX -bench Open1GiB ./target/core
//
// Measured on the 2-vCPU development VM (shared, load average 7-12): 0.3 ms
// per open with a warm page cache; 1.6-10 ms for the first open after
// dropping every cache (BenchmarkOpenFile with -benchtime=1x), once 287 ms
// while other jobs saturated the disk. The bound is 50 ms.
func BenchmarkOpen1GiB(b *testing.B) {
	if os.Getenv("SONDE_CORE_BENCH") == "" {
		b.Skip("set SONDE_CORE_BENCH=1 to write a 1 GiB core and time opening it")
	}
	path := benchCore(b, 1024)
	for b.Loop() {
		openAndReadRegisters(b, path)
	}
}

// BenchmarkReadMemory reads 64 bytes from the core (the heap) and from a
// mapped file (libc's text, which kernel cores leave out).
func BenchmarkReadMemory(b *testing.B) {
	path := benchCore(b, 0)
	tg, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	c := Of(tg)
	m, _ := c.Process().MemoryMap()
	var heap, text uint64
	for _, r := range m {
		if r.FileName == "" && r.Perm.String() == "rw-p" && heap == 0 && r.Size >= 1<<16 {
			heap = r.Addr
		}
		if r.Perm.String() == "r-xp" && len(r.FileName) > 0 && r.FileName[0] == '/' && r.Size > 1<<20 {
			text = r.Addr
		}
	}
	buf := make([]byte, 64)
	for _, bc := range []struct {
		name string
		addr uint64
	}{{"core", heap}, {"file", text}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for i := 0; b.Loop(); i++ {
				if _, err := c.Process().ReadMemory(bc.addr+uint64(i%512)*64, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenFile opens the core named by $SONDE_CORE, for timing real
// cores (with a cold page cache: drop caches, then -benchtime=1x).
func BenchmarkOpenFile(b *testing.B) {
	path := os.Getenv("SONDE_CORE")
	if path == "" {
		b.Skip("set SONDE_CORE=path/to/core")
	}
	for b.Loop() {
		openAndReadRegisters(b, path)
	}
}
