package elfsym

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// FuzzFromImage feeds arbitrary bytes to the whole reader (ELF headers,
// .symtab, .dynsym, relocations, PLT decoding): it must return, not panic,
// and whatever table it returns must answer lookups sanely. The seed is a
// whole executable, so minimizing a new input takes long; run with a short
// minimize time to keep exploring:
//
//	go test -run XXX -fuzz FuzzFromImage -fuzztime=30s -fuzzminimizetime=2s ./symbols/elfsym
func FuzzFromImage(f *testing.F) {
	if p, err := testprog.BuildE(testprog.Spec{Sources: []string{"sym_plt.c"}, Flags: []string{"-O1"}, Name: "sym_plt_lazy"}); err == nil {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, _ := FromImage("fuzz", data)
		if tab == nil {
			return
		}
		all := tab.Symbols()
		for _, s := range all {
			for _, a := range []uint64{s.Addr, s.Addr + 1, s.End()} {
				if got, _, ok := tab.Lookup(a); ok && !got.Contains(a) && !nearestZeroSize(all, got, a) {
					t.Fatalf("Lookup(%#x) = %+v which does not contain it and is not the zero-size symbol just before it", a, got)
				}
			}
			tab.ByName(s.Name)
		}
	})
}

// FuzzLookup builds tables from arbitrary (address, size) lists, overlaps
// and nesting included, and checks Lookup against a brute-force scan: a
// symbol is returned exactly when one contains the address, it contains
// the address, and no containing symbol starts later.
func FuzzLookup(f *testing.F) {
	f.Add([]byte{0, 10, 5, 0, 5, 3, 20, 4}, uint16(6))
	f.Add([]byte{0, 30, 5, 5, 12, 3, 4, 0}, uint16(13))
	f.Fuzz(func(t *testing.T, spec []byte, probe uint16) {
		if len(spec) > 64 {
			spec = spec[:64]
		}
		var syms []Symbol
		for i := 0; i+1 < len(spec); i += 2 {
			syms = append(syms, Symbol{Name: string(rune('a' + i/2%26)), Addr: uint64(spec[i]), Size: uint64(spec[i+1] % 40),
				Kind: KindFunc, Bind: elf.STB_GLOBAL})
		}
		tab := build("fuzz", append([]Symbol(nil), syms...))
		for a := uint64(0); a < 300; a++ {
			if probe != 0 && a != uint64(probe%300) && a%7 != 0 {
				continue
			}
			// The innermost sized symbol holding a, else a zero-size one at a
			// (a sized symbol beats a label inside it: gdb's rule).
			var best *Symbol
			for _, sized := range []bool{true, false} {
				for i := range syms {
					if (syms[i].Size > 0) == sized && syms[i].Contains(a) && (best == nil || syms[i].Addr > best.Addr) {
						best = &syms[i]
					}
				}
				if best != nil {
					break
				}
			}
			got, off, ok := tab.Lookup(a)
			if ok != (best != nil) {
				t.Fatalf("Lookup(%d): ok=%v, brute force found %v (symbols %v)", a, ok, best, syms)
			}
			if !ok {
				continue
			}
			if !got.Contains(a) || off != a-got.Addr || got.Addr != best.Addr {
				t.Fatalf("Lookup(%d) = %+v+%d, brute force %+v (symbols %v)", a, got, off, *best, syms)
			}
		}
	})
}

// FuzzDecodePLT: arbitrary section bytes, base and entry size never make
// the PLT decoder panic or produce a stub outside the section.
func FuzzDecodePLT(f *testing.F) {
	entry := []byte{0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0x10, 0, 0, 0, 0x0f, 0x1f, 0x44, 0, 0}
	f.Add(entry, uint64(0x1000), uint64(16), uint64(0x1000+11+0x10))
	f.Add([]byte{0xff, 0x25, 0, 0, 0, 0, 0x66, 0x90}, uint64(0x2000), uint64(8), uint64(0x2006))
	f.Fuzz(func(t *testing.T, data []byte, base, entsize, slot uint64) {
		syms := decodePLT(data, base, entsize, map[uint64]string{slot: "f"})
		for _, s := range syms {
			if s.Addr < base || s.Addr-base+s.Size > uint64(len(data)) || s.Name != "f@plt" {
				t.Fatalf("stub %+v outside section [%#x,+%d)", s, base, len(data))
			}
		}
	})
}

// FuzzParseRela: arbitrary relocation bytes against a small .dynsym.
func FuzzParseRela(f *testing.F) {
	rec := make([]byte, 24)
	binary.LittleEndian.PutUint64(rec, 0x4000)
	binary.LittleEndian.PutUint64(rec[8:], 1<<32|rX86_64JumpSlot)
	f.Add(rec)
	irel := make([]byte, 24)
	binary.LittleEndian.PutUint64(irel[8:], rX86_64Irelative)
	f.Add(irel)
	dyn := []elf.Symbol{{Name: "puts"}, {Name: "memcpy@GLIBC_2.2.5"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		slots := map[uint64]string{}
		if err := parseRela(data, binary.LittleEndian, dyn, slots); err == nil && len(slots) > len(data)/24 {
			t.Fatalf("%d slots from %d records", len(slots), len(data)/24)
		}
	})
}

// FuzzSortKey: the packed sort key orders symbols exactly as the
// documented rules (compareSymbols / better) do.
func FuzzSortKey(f *testing.F) {
	f.Add("clone3", "__clone3", uint8(0), uint8(0), uint16(71), uint16(71))
	f.Add("a", "b", uint8(0x12), uint8(0x21), uint16(0), uint16(5))
	f.Fuzz(func(t *testing.T, n1, n2 string, flags1, flags2 uint8, size1, size2 uint16) {
		mk := func(n string, fl uint8, size uint16) Symbol {
			return Symbol{Name: n, Addr: 0x1000, Size: uint64(size % 4),
				Bind: elf.SymBind(fl & 3), Kind: Kind(fl >> 2 & 3), Origin: Origin(fl >> 4 % 3)}
		}
		a, b := mk(n1, flags1, size1), mk(n2, flags2, size2)
		want := compareSymbols(a, b)
		sorted := sortSymbols([]Symbol{b, a})
		if want < 0 && sorted[0] != a || want > 0 && sorted[0] != b {
			t.Fatalf("sortSymbols order of %+v, %+v disagrees with compareSymbols (%d)", a, b, want)
		}
	})
}

// compareSymbols is the reference order sortSymbols implements with packed
// keys: by address, then zero-size before sized, then
// larger before smaller (so the last range starting at an address is its
// innermost sized one, which Lookup finds first), then by preference.
func compareSymbols(a, b Symbol) int {
	if c := cmpU64(a.Addr, b.Addr); c != 0 {
		return c
	}
	if (a.Size == 0) != (b.Size == 0) {
		if a.Size == 0 {
			return -1
		}
		return 1
	}
	if c := cmpU64(b.Size, a.Size); c != 0 {
		return c
	}
	if better(&a, &b) {
		return -1
	}
	if better(&b, &a) {
		return 1
	}
	return 0
}

// nearestZeroSize reports whether got is a zero-size symbol before a with no
// other symbol starting in between (the containing rule for size-less
// symbols).
func nearestZeroSize(all []Symbol, got Symbol, a uint64) bool {
	if got.Size != 0 || got.Addr > a {
		return false
	}
	for _, s := range all {
		if s.Addr > got.Addr && s.Addr <= a {
			return false
		}
	}
	return true
}

// FuzzLookupZeroSize: with section ranges, an address no sized symbol
// covers belongs to the zero-size symbol starting nearest before it, when
// that symbol is the last to start before it, lies in no sized symbol, and
// shares a section with the address; checked against a brute-force scan.
func FuzzLookupZeroSize(f *testing.F) {
	f.Add([]byte{0, 10, 12, 0, 20, 0, 22, 5, 40, 0}, []byte{0, 30, 35, 60}, uint16(25))
	f.Fuzz(func(t *testing.T, spec, secs []byte, probe uint16) {
		if len(spec) > 64 {
			spec = spec[:64]
		}
		var syms []Symbol
		for i := 0; i+1 < len(spec); i += 2 {
			syms = append(syms, Symbol{Name: string(rune('a' + i/2%26)), Addr: uint64(spec[i]), Size: uint64(spec[i+1] % 40),
				Kind: KindFunc, Bind: elf.STB_GLOBAL})
		}
		var rs []addrRange
		for i := 0; i+1 < len(secs) && len(rs) < 8; i += 2 {
			lo, hi := uint64(secs[i]), uint64(secs[i])+uint64(secs[i+1])
			if hi > lo {
				rs = append(rs, addrRange{lo, hi})
			}
		}
		tab := build("fuzz", append([]Symbol(nil), syms...))
		tab.sections = mergeRanges(rs)
		for a := uint64(0); a < 300; a++ {
			if probe != 0 && a != uint64(probe%300) && a%5 != 0 {
				continue
			}
			want, covered := bruteZeroSize(syms, tab.sections, a)
			got, _, ok := tab.Lookup(a)
			switch {
			case want == nil && ok:
				t.Fatalf("Lookup(%d) = %+v, want nothing (symbols %v, sections %v)", a, got, syms, tab.sections)
			case want != nil && (!ok || got.Addr != want.Addr || !covered && got.Size != 0):
				t.Fatalf("Lookup(%d) = %+v %v, want %+v (symbols %v, sections %v)", a, got, ok, *want, syms, tab.sections)
			}
		}
	})
}

// bruteZeroSize is Lookup's rule written directly (for a covered address,
// only the winning symbol's start is compared).
func bruteZeroSize(syms []Symbol, secs []addrRange, a uint64) (sym *Symbol, covered bool) {
	// A sized symbol holding a beats a zero-size one at a (gdb's rule).
	var best *Symbol
	for _, sized := range []bool{true, false} {
		for i := range syms {
			if (syms[i].Size > 0) == sized && syms[i].Contains(a) && (best == nil || syms[i].Addr > best.Addr) {
				best = &syms[i]
			}
		}
		if best != nil {
			return best, true
		}
	}
	// The last start at or before a.
	var last *Symbol
	for i := range syms {
		s := &syms[i]
		if s.Addr <= a && (last == nil || s.Addr > last.Addr || s.Addr == last.Addr && s.Size > 0) {
			last = s
		}
	}
	if last == nil || last.Size != 0 {
		return nil, false
	}
	for i := range syms {
		if s := syms[i]; s.Size > 0 && s.Addr < last.Addr && last.Addr < s.End() {
			return nil, false // inside a sized symbol
		}
	}
	for _, r := range secs {
		if r.lo <= last.Addr && last.Addr < r.hi && a < r.hi {
			return last, false
		}
	}
	return nil, false
}
