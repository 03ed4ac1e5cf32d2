package dwarf

import (
	"debug/elf"
	"slices"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// seedSections returns DWARF sections of a real gcc-built program.
func seedSections(f *testing.F, flags ...string) map[string][]byte {
	path, err := testprog.BuildE(testprog.Spec{Sources: []string{"dw_inline.c"}, Flags: flags, Name: "dwarf_seed"})
	if err != nil {
		f.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer ef.Close()
	out := map[string][]byte{}
	for _, s := range ef.Sections {
		if data, err := s.Data(); err == nil {
			out[s.Name] = data
		}
	}
	return out
}

// walkAll decodes every unit's DIEs and range lists the way package symbols does.
func walkAll(info, abbrev, rnglists, ranges []byte) {
	units, _ := ReadUnits(".debug_info", info, false)
	for i := range units {
		u := &units[i]
		ab, err := ParseAbbrevs(".debug_abbrev", abbrev, u.AbbrevOff)
		if err != nil {
			continue
		}
		ur := NewUnitReader(".debug_info", info, u, ab)
		var e Entry
		var bases Bases
		secs := func(StrSection) []byte { return info }
		for n := 0; !ur.Done() && n < 100000; n++ {
			if err := ur.Next(&e); err != nil {
				break
			}
			if n == 0 {
				bases = UnitBases(u, &e)
			}
			for k := range e.Fields {
				String(&e.Fields[k], u, ".debug_info", bases.StrOffsets, secs)
			}
			if f := e.Field(AttrRanges); f != nil {
				if u.Version >= 5 {
					Rnglist(rnglists, f.Val, u.AddrSize, 0, nil, nil)
				} else {
					RangesV4(ranges, f.Val, u.AddrSize, 0, nil)
				}
			}
			if n%7 == 0 {
				ur.SkipChildren(&e)
			}
		}
	}
}

func FuzzUnits(f *testing.F) {
	for _, flags := range [][]string{{"-O2", "-gdwarf-5"}, {"-O2", "-gdwarf-4"}} {
		s := seedSections(f, flags...)
		f.Add(s[".debug_info"], s[".debug_abbrev"], s[".debug_rnglists"], s[".debug_ranges"])
	}
	f.Fuzz(func(t *testing.T, info, abbrev, rnglists, ranges []byte) {
		walkAll(info, abbrev, rnglists, ranges)
	})
}

func FuzzLineTable(f *testing.F) {
	for _, flags := range [][]string{{"-O2", "-gdwarf-5"}, {"-O0", "-gdwarf-4"}} {
		s := seedSections(f, flags...)
		f.Add(s[".debug_line"], s[".debug_line_str"])
	}
	f.Fuzz(func(t *testing.T, line, lineStr []byte) {
		var off uint64
		for n := 0; off < uint64(len(line)) && n < 64; n++ {
			lt, err := ParseLineTable(line, off, "/comp", 8, LineStrings{LineStr: lineStr}, false)
			if err != nil || lt == nil {
				return
			}
			r := NewCursor("", line, off)
			l, is64 := r.InitialLength()
			if r.err != nil {
				return
			}
			off = r.off + l
			_ = is64
		}
	})
}

func FuzzAranges(f *testing.F) {
	s := seedSections(f, "-O2", "-gdwarf-5")
	f.Add(s[".debug_aranges"])
	f.Fuzz(func(t *testing.T, data []byte) {
		out, units, _ := ReadArangeSets(data)
		for _, a := range out {
			if a.Hi <= a.Lo {
				t.Fatalf("empty or inverted range %+v", a)
			}
			if !slices.Contains(units, a.UnitOffset) {
				t.Fatalf("range %+v of a unit not among the sets %v", a, units)
			}
		}
	})
}

func FuzzDWPIndex(f *testing.F) {
	// A minimal version 5 index: 1 column (info), 1 unit, 2 slots.
	seed := []byte{5, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0,
		0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // signatures
		0, 0, 0, 0, 1, 0, 0, 0, // rows... slot 0 empty, slot 1 row 1
		1, 0, 0, 0, // column ids
		0, 0, 0, 0, // offsets
		0x40, 0, 0, 0} // sizes
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		ReadDWPIndex(data)
	})
}

// FuzzLists decodes arbitrary bytes as every kind of location and range
// list, with indexed addresses resolved from the same bytes: each decoder
// must end with entries or an error, bounded by the input.
func FuzzLists(f *testing.F) {
	s := seedSections(f, "-O2", "-gdwarf-5")
	if l := s[".debug_loclists"]; len(l) > 12 {
		f.Add(l[12:], uint8(8))
	}
	if r := s[".debug_rnglists"]; len(r) > 12 {
		f.Add(r[12:], uint8(8))
	}
	s4 := seedSections(f, "-O2", "-gdwarf-4")
	f.Add(s4[".debug_loc"], uint8(8))
	f.Add(s4[".debug_ranges"], uint8(8))
	f.Fuzz(func(t *testing.T, data []byte, addrSize uint8) {
		addrx := func(i uint64) (uint64, error) { return AddrAt(data, 0, i, 8) }
		check := func(what string, n int) {
			if n > MaxListEntries+1 || n > len(data) {
				t.Fatalf("%s: %d entries from %d bytes", what, n, len(data))
			}
		}
		l, _ := LocV4(data, 0, addrSize, 0x1000)
		check("LocV4", len(l))
		l, _ = LocLists(data, 0, addrSize, 0x1000, addrx)
		check("LocLists", len(l))
		l, _ = LocLists(data, 0, addrSize, 0x1000, nil)
		check("LocLists without .debug_addr", len(l))
		l, _ = LocGNUSplit(data, 0, 0x1000, addrx)
		check("LocGNUSplit", len(l))
		if off, err := LoclistOffset(data, 0, uint64(addrSize), false); err == nil && off > uint64(len(data))+0xffffffff {
			t.Fatalf("offset %#x", off)
		}
		r, _ := RangesV4(data, 0, addrSize, 0x1000, nil)
		check("RangesV4", len(r))
		r, _ = Rnglist(data, 0, addrSize, 0x1000, addrx, nil)
		check("Rnglist", len(r))
	})
}

// FuzzCursor reads arbitrary bytes with every cursor call: the cursor never
// reads past its data and its first error sticks.
func FuzzCursor(f *testing.F) {
	f.Add([]byte{0x80, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 'a', 0})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		c := NewCursor("fuzz", data, 0)
		for i := 0; c.Err() == nil && i < len(data)+1; i++ {
			switch data[int(c.Pos())%len(data)] % 9 {
			case 0:
				c.Uleb()
			case 1:
				c.Sleb()
			case 2:
				c.U16()
			case 3:
				c.U24()
			case 4:
				c.U32()
			case 5:
				c.U64()
			case 6:
				c.CStr()
			case 7:
				c.InitialLength()
			default:
				c.Bytes(uint64(c.U8()))
			}
			if c.Pos() > uint64(len(data)) {
				t.Fatalf("cursor at %d past %d bytes", c.Pos(), len(data))
			}
		}
		if c.Err() != nil && c.Remaining() != 0 {
			t.Fatal("an error left bytes to read")
		}
	})
}
