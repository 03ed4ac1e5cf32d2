package elfsym

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// TestSymtab64MatchesDebugElf: readSymtab64 gives debug/elf's Symbols
// entry for entry (names, values, sizes, info, sections) on real files
// with a .symtab: gcc-built programs (dynamic and static) and libc's
// debug file when libc6-dbg is installed.
func TestSymtab64MatchesDebugElf(t *testing.T) {
	files := []string{buildPLT(t, "lazy", []string{"-O1"}), buildPLT(t, "static", []string{"-O1", "-static"})}
	if m, _ := filepath.Glob("/usr/lib/debug/.build-id/*/*.debug"); len(m) > 0 {
		for _, p := range m {
			if f, err := elf.Open(p); err == nil {
				if f.SectionByType(elf.SHT_SYMTAB) != nil && len(files) < 4 {
					files = append(files, p)
				}
				f.Close()
			}
		}
	}
	for _, p := range files {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.Symbols()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var got []elf.Symbol
		var idx []int
		done, err := readSymtab64(f, func(int) {}, func(es *elf.Symbol, i int) { got = append(got, *es); idx = append(idx, i) })
		f.Close()
		if !done || err != nil {
			t.Fatalf("%s: done %v, %v", p, done, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d symbols, debug/elf %d", p, len(got), len(want))
		}
		for i := range want {
			w, g := want[i], got[i]
			if g.Name != w.Name || g.Value != w.Value || g.Size != w.Size || g.Info != w.Info || g.Other != w.Other || g.Section != w.Section || idx[i] != i+1 {
				t.Fatalf("%s entry %d: %+v (index %d), debug/elf %+v", p, i+1, g, idx[i], w)
			}
		}
		t.Logf("%s: %d symbols alike", p, len(want))
	}
}

// TestSymtab64RefusesBadSizes: a .strtab or .symtab whose size runs past
// the file, or a name offset past .strtab, is an error naming it, not an
// allocation or a panic.
func TestSymtab64RefusesBadSizes(t *testing.T) {
	data, err := os.ReadFile(buildPLT(t, "lazy", []string{"-O1"}))
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytesReader(data))
	if err != nil {
		t.Fatal(err)
	}
	sym := f.SectionByType(elf.SHT_SYMTAB)
	str := f.Sections[sym.Link]
	// Section headers: e_shoff at 0x28, e_shentsize 64; sh_size at +32.
	shOff := int(le64(data[0x28:]))
	for _, c := range []struct {
		name  string
		index int
	}{{"symtab", sectionIndex(f, sym)}, {"strtab", sectionIndex(f, str)}} {
		bad := append([]byte(nil), data...)
		putLE64(bad[shOff+64*c.index+32:], uint64(len(data))*4)
		bf, err := elf.NewFile(bytesReader(bad))
		if err != nil {
			continue // debug/elf refused the header itself
		}
		done, err := readSymtab64(bf, func(int) {}, func(*elf.Symbol, int) {})
		if !done || err == nil {
			t.Errorf("%s past the file's end: done %v, err %v", c.name, done, err)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}

func sectionIndex(f *elf.File, s *elf.Section) int {
	for i, x := range f.Sections {
		if x == s {
			return i
		}
	}
	return -1
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func putLE64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// BenchmarkSymtabRead reads the .symtab of libc's debug file and, when a
// rustup toolchain is installed, of librustc_driver (165,000 symbols, a
// 20 MB .strtab) with debug/elf's Symbols and with readSymtab64.
func BenchmarkSymtabRead(b *testing.B) {
	files := map[string]string{}
	if _, debug := libcDebugFile(b); debug != "" {
		files["libc"] = debug
	}
	home, _ := os.UserHomeDir()
	if m, _ := filepath.Glob(filepath.Join(home, ".rustup/toolchains/*/lib/librustc_driver-*.so")); len(m) > 0 {
		files["rustc_driver"] = m[0]
	}
	for name, p := range files {
		f, err := elf.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/debugelf", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := f.Symbols(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/symtab64", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				n := 0
				if _, err := readSymtab64(f, func(int) {}, func(*elf.Symbol, int) { n++ }); err != nil {
					b.Fatal(err)
				}
			}
		})
		f.Close()
	}
}
