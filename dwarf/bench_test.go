package dwarf

import (
	"debug/elf"
	"os"
	"testing"
)

// benchSections returns the DWARF sections of SONDE_BENCH_LIB (default
// Debian's libpython3.11d, as bench/symbolize uses), decompressed.
func benchSections(b *testing.B) map[string][]byte {
	path := os.Getenv("SONDE_BENCH_LIB")
	if path == "" {
		path = "/usr/lib/x86_64-linux-gnu/libpython3.11d.so.1.0"
	}
	ef, err := elf.Open(path)
	if err != nil {
		b.Skipf("no benchmark library: %v", err)
	}
	defer ef.Close()
	out := map[string][]byte{}
	for _, s := range ef.Sections {
		if d, err := s.Data(); err == nil {
			out[s.Name] = d
		}
	}
	if len(out[".debug_info"]) == 0 {
		b.Skipf("%s has no DWARF", path)
	}
	return out
}

// BenchmarkLineTables decodes every line program of the library (the
// symbolizer decodes one per unit it touches).
func BenchmarkLineTables(b *testing.B) {
	s := benchSections(b)
	line := s[".debug_line"]
	strs := LineStrings{Str: s[".debug_str"], LineStr: s[".debug_line_str"]}
	var offs []uint64
	for off := uint64(0); off < uint64(len(line)); {
		offs = append(offs, off)
		r := NewCursor("", line, off)
		l, _ := r.InitialLength()
		if r.Err() != nil {
			break
		}
		off = r.Pos() + l
	}
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, off := range offs {
			if _, err := ParseLineTable(line, off, "/comp", 8, strs, false); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDIEs decodes every DIE of every unit of the library.
func BenchmarkDIEs(b *testing.B) {
	s := benchSections(b)
	info, abbrev := s[".debug_info"], s[".debug_abbrev"]
	units, err := ReadUnits(".debug_info", info, false)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(info)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var e Entry
		for k := range units {
			u := &units[k]
			ab, err := ParseAbbrevs(".debug_abbrev", abbrev, u.AbbrevOff)
			if err != nil {
				b.Fatal(err)
			}
			ur := NewUnitReader(".debug_info", info, u, ab)
			for !ur.Done() {
				if err := ur.Next(&e); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
