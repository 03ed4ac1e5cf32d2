package dwarf

import (
	stddwarf "debug/dwarf"
	"debug/elf"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestStringsMatchStdlib: every string attribute of a real program's DIEs
// (DW_FORM_strp, line_strp, strx, string), resolved by String from the
// unit's bases (UnitBases), is what the standard library's reader reads,
// for GCC's DWARF 4 and 5.
func TestStringsMatchStdlib(t *testing.T) {
	for _, flags := range [][]string{{"-O2", "-gdwarf-5"}, {"-O0", "-gdwarf-4"}, {"-O2", "-gdwarf-5", "-gsplit-dwarf"}} {
		path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c"}, Flags: flags, Name: "dwarf_strings"})
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer ef.Close()
		want := stdlibStrings(t, ef)
		sec := map[string][]byte{}
		for _, s := range ef.Sections {
			if data, err := s.Data(); err == nil {
				sec[s.Name] = data
			}
		}
		info := sec[".debug_info"]
		units, err := ReadUnits(".debug_info", info, false)
		if err != nil {
			t.Fatal(err)
		}
		sections := func(s StrSection) []byte {
			return map[StrSection][]byte{StrUnit: info, StrStr: sec[".debug_str"], StrLineStr: sec[".debug_line_str"], StrOffsets: sec[".debug_str_offsets"]}[s]
		}
		n := 0
		for i := range units {
			u := &units[i]
			ab, err := ParseAbbrevs(".debug_abbrev", sec[".debug_abbrev"], u.AbbrevOff)
			if err != nil {
				t.Fatal(err)
			}
			ur := NewUnitReader(".debug_info", info, u, ab)
			var bases Bases
			for first := true; !ur.Done(); first = false {
				var e Entry
				if err := ur.Next(&e); err != nil {
					t.Fatal(err)
				}
				if first {
					bases = UnitBases(u, &e)
				}
				for k := range e.Fields {
					f := &e.Fields[k]
					if f.Class < ClassString || f.Class > ClassStrx {
						continue
					}
					got, err := String(f, u, ".debug_info", bases.StrOffsets, sections)
					key := strKey{e.Offset, f.Attr}
					if err != nil || got != want[key] {
						t.Errorf("%v: DIE %#x attribute %#x: %q, %v; the standard library reads %q", flags, e.Offset, f.Attr, got, err, want[key])
					}
					n++
				}
			}
		}
		if n == 0 || n != len(want) {
			t.Errorf("%v: %d strings resolved, the standard library has %d", flags, n, len(want))
		}
	}
}

type strKey struct {
	off  uint64
	attr uint16
}

// stdlibStrings returns every string attribute the standard library's
// reader reads from ef's DIEs.
func stdlibStrings(t *testing.T, ef *elf.File) map[strKey]string {
	d, err := ef.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	out := map[strKey]string{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return out
		}
		for _, f := range e.Field {
			if s, ok := f.Val.(string); ok && f.Class == stddwarf.ClassString {
				out[strKey{uint64(e.Offset), uint16(f.Attr)}] = s
			}
		}
	}
}

// TestUnitBasesDefaults: a unit that names no bases reads its indexed forms
// from just past the DWARF 5 sections' headers (32- and 64-bit), and from 0
// in DWARF 4 (the GNU .debug_addr has no header); a named base wins.
func TestUnitBasesDefaults(t *testing.T) {
	for _, c := range []struct {
		version uint16
		is64    bool
		want    Bases
	}{
		{4, false, Bases{}},
		{5, false, Bases{StrOffsets: 8, Addr: 8, Rnglists: 12}},
		{5, true, Bases{StrOffsets: 16, Addr: 16, Rnglists: 20}},
	} {
		u := Unit{Version: c.version, Is64: c.is64}
		if got := UnitBases(&u, &Entry{}); got != c.want {
			t.Errorf("version %d, 64-bit %v: %+v, want %+v", c.version, c.is64, got, c.want)
		}
		e := Entry{Fields: []Field{{Attr: AttrAddrBase, Val: 0x40}}}
		if got := UnitBases(&u, &e); got.Addr != 0x40 || !got.AddrSet {
			t.Errorf("version %d: DW_AT_addr_base 0x40 gives %+v", c.version, got)
		}
	}
}
