package debugfile

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// elfSamples are real ELF files of several kinds: the test binary (a static
// Go executable), and the system's dynamic loader, libc and a program.
func elfSamples(t testing.TB) []string {
	paths := []string{os.Args[0]}
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6", "/bin/true", "/usr/bin/env"} {
		if q, err := filepath.EvalSymlinks(p); err == nil {
			paths = append(paths, q)
		}
	}
	return paths
}

// TestProgsMatchDebugELF: the program headers and the PT_NOTE build-id read
// without the section headers are debug/elf's and BuildID's on real files.
func TestProgsMatchDebugELF(t *testing.T) {
	withID := 0
	for _, path := range elfSamples(t) {
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := BuildID(ef)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		progs, order, err := Progs(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if order != ef.ByteOrder || len(progs) != len(ef.Progs) {
			t.Fatalf("%s: %d program headers (%v), debug/elf %d (%v)", path, len(progs), order, len(ef.Progs), ef.ByteOrder)
		}
		for i, p := range ef.Progs {
			if progs[i] != p.ProgHeader {
				t.Errorf("%s: program header %d: %+v, debug/elf %+v", path, i, progs[i], p.ProgHeader)
			}
		}
		got, err := NoteBuildID(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// Go's linker keeps .note.gnu.build-id out of the PT_NOTE
		// segment (nil here: callers ask BuildID); where the segment
		// has one, it is the section's.
		if got != nil && !bytes.Equal(got, want) {
			t.Errorf("%s: PT_NOTE build-id %x, BuildID %x", path, got, want)
		}
		if got != nil {
			withID++
		}
		f.Close()
		ef.Close()
	}
	if withID == 0 {
		t.Error("no sample file has a build-id: the note path was not exercised")
	}
}

// TestProgsRejects: what is not an ELF file, or lies about its program
// headers, is an error, not a panic nor a huge allocation.
func TestProgsRejects(t *testing.T) {
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	hdr := append([]byte(nil), self[:64]...)
	bad := map[string][]byte{
		"empty":      nil,
		"not ELF":    []byte("#!/bin/sh\necho hello, this is not an ELF file at all....................."),
		"cut header": hdr[:40],
		"bad class":  func() []byte { b := append([]byte(nil), hdr...); b[elf.EI_CLASS] = 9; return b }(),
		"bad data":   func() []byte { b := append([]byte(nil), hdr...); b[elf.EI_DATA] = 7; return b }(),
		"phentsize":  func() []byte { b := append([]byte(nil), hdr...); b[54] = 40; return b }(),
		"many progs": func() []byte { b := append([]byte(nil), hdr...); b[56], b[57] = 0xff, 0xff; return b }(),
		"progs gone": hdr, // the program headers lie past the end
		"far phoff":  func() []byte { b := append([]byte(nil), hdr...); b[39] = 0x7f; return b }(),
	}
	for name, data := range bad {
		if _, _, err := Progs(bytes.NewReader(data)); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := NoteBuildID(bytes.NewReader(data)); err == nil {
			t.Errorf("%s: NoteBuildID: no error", name)
		}
	}
}

// FuzzProgs: arbitrary bytes as an ELF file; where debug/elf reads the file
// too, the program headers agree.
func FuzzProgs(f *testing.F) {
	for _, path := range elfSamples(f) {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b[:min(len(b), 8192)])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		progs, _, err := Progs(bytes.NewReader(data))
		NoteBuildID(bytes.NewReader(data))
		if err != nil {
			return
		}
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(progs) != len(ef.Progs) {
			t.Fatalf("%d program headers, debug/elf %d", len(progs), len(ef.Progs))
		}
		for i, p := range ef.Progs {
			if progs[i] != p.ProgHeader {
				t.Fatalf("program header %d: %+v, debug/elf %+v", i, progs[i], p.ProgHeader)
			}
		}
	})
}
