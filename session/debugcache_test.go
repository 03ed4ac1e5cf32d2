package session

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestInflateELF compresses a real debug file's sections with objcopy,
// inflates it back with inflateELF, and checks every section's bytes and
// the flags against the original.
func TestInflateELF(t *testing.T) {
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2"}, Name: "stk-threads-O2"})
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.debug")
	packed := filepath.Join(dir, "packed.debug")
	for _, args := range [][]string{
		{"--only-keep-debug", bin, plain},
		{"--compress-debug-sections=zlib", plain, packed},
	} {
		if out, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, out)
		}
	}
	pf, err := elf.Open(packed)
	if err != nil {
		t.Fatal(err)
	}
	if !hasCompressedSections(pf) {
		t.Fatal("objcopy compressed nothing")
	}
	pf.Close()
	out := filepath.Join(dir, "cache", "inflated.debug")
	if err := inflateELF(packed, out); err != nil {
		t.Fatal(err)
	}
	want, err := elf.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	got, err := elf.Open(out)
	if err != nil {
		t.Fatalf("inflated file does not parse: %v", err)
	}
	defer got.Close()
	if len(got.Sections) != len(want.Sections) {
		t.Fatalf("%d sections, want %d", len(got.Sections), len(want.Sections))
	}
	checked := 0
	for i, ws := range want.Sections {
		gs := got.Sections[i]
		if gs.Name != ws.Name || gs.Type != ws.Type || gs.Addr != ws.Addr {
			t.Errorf("section %d: %s %v %#x, want %s %v %#x", i, gs.Name, gs.Type, gs.Addr, ws.Name, ws.Type, ws.Addr)
			continue
		}
		if gs.Flags&elf.SHF_COMPRESSED != 0 {
			t.Errorf("%s still marked compressed", gs.Name)
		}
		if ws.Type == elf.SHT_NOBITS {
			continue
		}
		wb, err1 := ws.Data()
		gb, err2 := gs.Data()
		if err1 != nil || err2 != nil {
			t.Errorf("%s: %v %v", ws.Name, err1, err2)
			continue
		}
		if !bytes.Equal(wb, gb) {
			t.Errorf("%s: %d bytes differ from the original's %d", ws.Name, len(gb), len(wb))
		}
		checked++
	}
	if checked < 5 {
		t.Errorf("only %d sections compared", checked)
	}
}

// TestInflateELFRejectsGarbage: a damaged file is an error, never a panic
// or a half-written cache entry.
func TestInflateELFRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bad")
	os.WriteFile(src, append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 100)...), 0o644)
	dst := filepath.Join(dir, "out")
	if err := inflateELF(src, dst); err == nil {
		t.Fatal("no error for a garbage file")
	}
	if _, err := os.Stat(dst); err == nil {
		t.Fatal("a cache entry was written for a garbage file")
	}
}

// FuzzInflateELF feeds arbitrary files to the inflater: errors are fine,
// panics and hangs are not.
func FuzzInflateELF(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	if b, err := os.ReadFile("/bin/true"); err == nil && len(b) < 1<<20 {
		f.Add(b[:min(len(b), 4096)])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		src := filepath.Join(dir, "in")
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		inflateELF(src, filepath.Join(dir, "out"))
	})
}
