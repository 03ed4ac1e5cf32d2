package elfsym

import (
	"debug/elf"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/symbols/internal/demangler"
)

// Table is an immutable index of a module's symbols, safe for concurrent use.
type Table struct {
	name string
	// syms holds every symbol, sorted by address, then zero-size before
	// sized, then larger before smaller (so the last range starting at an
	// address is its innermost), then by preference (see better).
	syms []Symbol
	// One entry per distinct (Addr, Size) range, in the order of syms:
	// start/end of the range, the index of its preferred symbol in syms,
	// and the entry of the nearest earlier range still open at this start
	// (-1 if none), which is where Lookup continues when a range ends
	// before the address.
	start, end []uint64
	first      []int32
	parent     []int32

	// sections are the address ranges of the files' allocated sections,
	// sorted and merged: a zero-size symbol names the addresses after it
	// up to the end of its section (see Lookup).
	sections []addrRange

	// Name indexes, built on first use: a profiler or unwinder that only
	// looks addresses up never pays for them.
	namesOnce     sync.Once
	byName        map[string][]int32
	demangledOnce sync.Once
	byDemangled   map[string][]int32
	globalCxxOnce sync.Once
	globalCxx     map[string]bool // see mayDemangleTo
}

func build(name string, all []Symbol) *Table {
	syms := dedupe(sortSymbols(all))
	t := &Table{name: name, syms: syms}
	// Sized up front: appending to 150,000-entry lists (librustc_driver)
	// copied them over and over.
	t.start = make([]uint64, 0, len(syms))
	t.end = make([]uint64, 0, len(syms))
	t.first = make([]int32, 0, len(syms))
	t.parent = make([]int32, 0, len(syms))
	var stack []int32 // open ranges, innermost on top
	for i := range syms {
		s := &syms[i]
		if n := len(t.start); n > 0 && t.start[n-1] == s.Addr && t.end[n-1] == s.End() &&
			(t.start[n-1] == t.end[n-1]) == (s.Size == 0) {
			continue // alias of the previous range: already sorted behind its preferred symbol
		}
		for len(stack) > 0 && t.end[stack[len(stack)-1]] <= s.Addr {
			stack = stack[:len(stack)-1]
		}
		parent := int32(-1)
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		idx := int32(len(t.start))
		t.start = append(t.start, s.Addr)
		t.end = append(t.end, s.End())
		t.first = append(t.first, int32(i))
		t.parent = append(t.parent, parent)
		if s.Size > 0 {
			stack = append(stack, idx)
		}
	}
	return t
}

// sortKey is what sortSymbols compares: sorting 32-byte keys and permuting
// once is several times faster than sorting Symbols with better() (this is
// most of the cost of building a table for libc).
type sortKey struct {
	addr, size, pref uint64
	idx              int32
}

// sortSymbols returns all in the order described at Table.syms (the
// tests check it against a direct implementation of those rules).
func sortSymbols(all []Symbol) []Symbol {
	keys := make([]sortKey, len(all))
	for i := range all {
		s := &all[i]
		size := uint64(0) // zero-size first, then larger before smaller
		if s.Size > 0 {
			size = ^s.Size + 1
		}
		keys[i] = sortKey{addr: s.Addr, size: size, pref: prefKey(s), idx: int32(i)}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if a.addr != b.addr {
			return cmpU64(a.addr, b.addr)
		}
		if a.size != b.size {
			return cmpU64(a.size, b.size)
		}
		if a.pref != b.pref {
			return cmpU64(a.pref, b.pref)
		}
		return strings.Compare(all[a.idx].Name, all[b.idx].Name)
	})
	out := make([]Symbol, len(all))
	for i, k := range keys {
		out[i] = all[k.idx]
	}
	return out
}

// prefKey packs the rules of better() after the size rule into one number,
// smaller is preferred: local, leading underscores, not GLOBAL, NOTYPE,
// origin, name length. Ties are broken by the name itself.
func prefKey(s *Symbol) uint64 {
	var k uint64
	if s.Bind == elf.STB_LOCAL {
		k |= 1 << 63
	}
	k |= uint64(min(leadingUnderscores(s.Name), 255)) << 55
	if s.Bind != elf.STB_GLOBAL {
		k |= 1 << 54
	}
	if s.Kind == KindNone {
		k |= 1 << 53
	}
	k |= uint64(s.Origin&3) << 51
	k |= uint64(min(len(s.Name), 1<<40-1))
	return k
}

// dedupe drops copies of one symbol (the same name over the same range,
// from .symtab and .dynsym, or from the binary and its debug file), keeping
// the preferred copy, which sorts first, and any version the others carry.
// Copies share an (Addr, Size) group of the sorted slice but need not be
// adjacent in it.
func dedupe(sorted []Symbol) []Symbol {
	out := sorted[:0]
	var seen map[string]int // name -> index in out, for large groups
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].Addr == sorted[i].Addr && sorted[j].Size == sorted[i].Size {
			j++
		}
		groupStart := len(out)
		large := j-i > 8
		if large {
			clear(seen)
			if seen == nil {
				seen = make(map[string]int)
			}
		}
		for k := i; k < j; k++ {
			s := sorted[k]
			dup := -1
			if large {
				if d, ok := seen[s.Name]; ok {
					dup = d
				}
			} else {
				for d := groupStart; d < len(out); d++ {
					if out[d].Name == s.Name {
						dup = d
						break
					}
				}
			}
			if dup >= 0 {
				if out[dup].Version == "" {
					out[dup].Version = s.Version
				}
				continue
			}
			if large {
				seen[s.Name] = len(out)
			}
			out = append(out, s)
		}
		i = j
	}
	return slices.Clip(out)
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Name is the module name the table was built with.
func (t *Table) Name() string { return t.name }

// Len is the number of symbols (aliases included).
func (t *Table) Len() int { return len(t.syms) }

// Lookup returns the symbol containing addr and addr's offset into it. It
// never returns a symbol whose range does not contain addr (see the package
// comment); ok is false when no symbol does. Where ranges nest, the
// innermost wins; where symbols share a range, the preferred one.
func (t *Table) Lookup(addr uint64) (sym Symbol, offset uint64, ok bool) {
	// Last range starting at or before addr (hand-written binary search:
	// this is the hot path of symbolization without DWARF).
	lo, hi := 0, len(t.start)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.start[m] <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := int32(lo - 1); i >= 0; i = t.parent[i] {
		// A zero-size symbol at addr names it unless a sized symbol
		// encloses it: gdb's minimal-symbol lookup and elfutils take the
		// sized one (qemu's safe_syscall_base, not the label
		// safe_syscall_end at the pc after its syscall).
		if addr < t.end[i] || (addr == t.start[i] && t.start[i] == t.end[i] && t.parent[i] < 0) {
			s := t.syms[t.first[i]]
			return s, addr - s.Addr, true
		}
	}
	// No symbol covers addr. When the nearest symbol before it is a
	// zero-size one in the same section (crtstuff's register_tm_clones,
	// an assembly label), it names addr, as in gdb's minimal-symbol lookup
	// and binutils: a size-less symbol extends to the next symbol. A sized
	// symbol that ended before addr stops this (the gap after a function
	// has no name), and so does one enclosing the zero-size symbol (a
	// label inside a function does not name what follows the function).
	if i := lo - 1; i >= 0 && t.start[i] == t.end[i] && t.parent[i] < 0 && t.sameSection(t.start[i], addr) {
		s := t.syms[t.first[i]]
		return s, addr - s.Addr, true
	}
	return Symbol{}, 0, false
}

// addrRange is [lo, hi).
type addrRange struct{ lo, hi uint64 }

// sameSection reports whether a <= b lie in one allocated section.
func (t *Table) sameSection(a, b uint64) bool {
	i, found := slices.BinarySearchFunc(t.sections, a, func(r addrRange, a uint64) int {
		switch {
		case r.hi <= a:
			return -1
		case r.lo > a:
			return 1
		}
		return 0
	})
	return found && b < t.sections[i].hi
}

// sectionRanges returns the address ranges of the allocated, non-TLS
// sections of files (TLS sections hold templates whose addresses overlap
// other sections), sorted, overlaps and repeats merged.
func sectionRanges(files []*elf.File) []addrRange {
	var rs []addrRange
	for _, f := range files {
		if f == nil {
			continue
		}
		for _, sec := range f.Sections {
			if sec.Flags&elf.SHF_ALLOC == 0 || sec.Flags&elf.SHF_TLS != 0 || sec.Size == 0 || sec.Addr == 0 {
				continue
			}
			hi := sec.Addr + sec.Size
			if hi < sec.Addr {
				continue // wraps: a corrupt header
			}
			rs = append(rs, addrRange{sec.Addr, hi})
		}
	}
	return mergeRanges(rs)
}

// mergeRanges sorts non-empty ranges and resolves overlaps.
func mergeRanges(rs []addrRange) []addrRange {
	slices.SortFunc(rs, func(a, b addrRange) int { return cmpU64(a.lo, b.lo) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo < out[n-1].hi {
			// Overlapping sections (the same section from the binary and
			// its debug file, or a corrupt header): keep the first whole
			// and start the next where it ends.
			if r.hi > out[n-1].hi {
				out = append(out, addrRange{out[n-1].hi, r.hi})
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// Aliases returns every symbol that starts at addr, preferred first.
func (t *Table) Aliases(addr uint64) []Symbol {
	i, _ := slices.BinarySearchFunc(t.syms, addr, func(s Symbol, a uint64) int { return cmpU64(s.Addr, a) })
	var out []Symbol
	for ; i < len(t.syms) && t.syms[i].Addr == addr; i++ {
		out = append(out, t.syms[i])
	}
	slices.SortStableFunc(out, func(a, b Symbol) int {
		if better(&a, &b) {
			return -1
		}
		if better(&b, &a) {
			return 1
		}
		return 0
	})
	return out
}

// Symbols returns the preferred symbol of every distinct address range, in
// address order.
func (t *Table) Symbols() []Symbol {
	out := make([]Symbol, len(t.first))
	for i, j := range t.first {
		out[i] = t.syms[j]
	}
	return out
}

// ByName returns the symbols called name, matched against the linkage name
// ("_ZN2ns3fooEv", "puts@plt"), then, if nothing matched, against demangled
// names with and without parameters ("ns::foo()", "ns::foo"). Results are
// in address order.
func (t *Table) ByName(name string) []Symbol {
	t.namesOnce.Do(t.indexNames)
	idx := t.byName[name]
	if len(idx) == 0 && t.mayDemangleTo(name) {
		t.demangledOnce.Do(t.indexDemangled)
		idx = t.byDemangled[name]
	}
	out := make([]Symbol, 0, len(idx))
	for _, i := range idx {
		out = append(out, t.syms[i])
	}
	return out
}

// mayDemangleTo reports whether a symbol's demangled name could be the
// plain identifier name (no scope, template or parameters): only a C++
// function of the global namespace, mangled _Z<len><name>… or
// _ZL<len><name>…, can be. Without it, a C name no symbol has (a C call
// site's callee looked for in every module) built the demangled index of
// every symbol of each C++ program and library: a third of a second of
// CPU in one sonde stack of beam.smp. For a name that is not a plain
// identifier it says yes.
func (t *Table) mayDemangleTo(name string) bool {
	if !plainIdentifier(name) {
		return true
	}
	t.globalCxxOnce.Do(t.indexGlobalCxx)
	return t.globalCxx[name]
}

// indexGlobalCxx collects the identifiers of the global-namespace C++
// names (_Z3foov: foo; _ZL3barv: bar), reading the lengths, not demangling.
func (t *Table) indexGlobalCxx() {
	t.globalCxx = map[string]bool{}
	for i := range t.syms {
		n := t.syms[i].Name
		if !strings.HasPrefix(n, "_Z") {
			continue
		}
		n = strings.TrimPrefix(n[2:], "L")
		j := 0
		for j < len(n) && j < 4 && n[j] >= '0' && n[j] <= '9' {
			j++
		}
		if j == 0 {
			continue
		}
		l, err := strconv.Atoi(n[:j])
		if err != nil || l <= 0 || j+l > len(n) {
			continue
		}
		t.globalCxx[n[j:j+l]] = true
	}
}

// plainIdentifier reports whether name is a C identifier.
func plainIdentifier(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ByLinkageName returns the symbols whose linkage name (its @version
// dropped, as in ByName) is name, in address order, never trying demangled
// names: a name from DWARF (DW_AT_linkage_name, or DW_AT_name for C) is
// already the symbol's, and demangling every symbol of a large C++ library
// (libjvm.so's 54k) to miss it would cost seconds.
func (t *Table) ByLinkageName(name string) []Symbol {
	t.namesOnce.Do(t.indexNames)
	idx := t.byName[name]
	out := make([]Symbol, 0, len(idx))
	for _, i := range idx {
		out = append(out, t.syms[i])
	}
	return out
}

func (t *Table) indexNames() {
	t.byName = make(map[string][]int32, len(t.syms))
	for i := range t.syms {
		n := t.syms[i].Name
		t.byName[n] = append(t.byName[n], int32(i))
	}
}

// indexDemangled builds the demangled-name index on first use: demangling
// every C++ symbol of a large library is not free and most sessions never
// look a demangled name up.
func (t *Table) indexDemangled() {
	t.byDemangled = make(map[string][]int32)
	for i := range t.syms {
		n := t.syms[i].Name
		d := Demangle(n)
		if d == n {
			continue
		}
		t.byDemangled[d] = append(t.byDemangled[d], int32(i))
		base, plt := strings.CutSuffix(n, "@plt")
		short := demangleNoParams(base)
		if plt {
			short += "@plt"
		}
		if short != d && short != n {
			t.byDemangled[short] = append(t.byDemangled[short], int32(i))
		}
	}
}

func demangleNoParams(name string) string {
	if d, ok := demangler.WithoutParams(name); ok {
		return d
	}
	return name
}

// DemangledNoParams is a C++ or Rust linkage name as perf prints it
// (no parameter lists or return types, Rust hashes dropped), or name itself
// when it is not mangled. It goes through sonde's one demangler entry:
// bounded output, Rust legacy names decoded, a panic on a hostile name
// refused.
func DemangledNoParams(name string) string { return demangleNoParams(name) }
