// Package jitmap reads the files JIT compilers write to name the code they
// generate, in the conventions of perf (tools/perf/Documentation/jit-interface.txt
// and jitdump-specification.txt): /tmp/perf-PID.map, one "START SIZE name"
// line per function (Node --perf-basic-prof, the JVM's perf-map-agent,
// .NET DOTNET_PerfMapEnabled, LuaJIT), and jit-PID.dump, a binary record
// stream of code loads and moves (what perf inject --jit reads).
//
// Both files are written by the target while it runs and are untrusted:
// the parsers stop at the first damaged record and return what came before it
// with an error that names the place; they never allocate by a length read
// from the file beyond the file's own size.
package jitmap

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// Symbol is one named range of JIT code.
type Symbol struct {
	Start, Size uint64
	Name        string
	seq         int // order of appearance: later entries describe newer code
}

// End is the first address after the symbol.
func (s Symbol) End() uint64 { return s.Start + s.Size }

// Table answers which JIT symbol covers an address. Code is reused by JIT
// runtimes: where entries overlap, the one written last wins.
type Table struct {
	syms []Symbol // sorted by Start
	// maxEnd[i] is the largest End of syms[0..i]: a lookup scanning back
	// stops where no earlier symbol can reach the address.
	maxEnd []uint64
}

// FormatError is a damaged map or dump file: what is wrong and where.
type FormatError struct {
	File   string // "perf map" or "jitdump"
	Offset int64  // byte offset (jitdump) or line number (perf map)
	Msg    string
}

func (e *FormatError) Error() string {
	unit := "offset"
	if e.File == "perf map" {
		unit = "line"
	}
	return fmt.Sprintf("jitmap: %s: %s %d: %s", e.File, unit, e.Offset, e.Msg)
}

// maxOverlapScan bounds how many earlier-starting symbols Lookup examines for
// one that still covers the address.
const maxOverlapScan = 64

func newTable(syms []Symbol) *Table {
	sorted := true
	for i := range syms {
		syms[i].seq = i
		sorted = sorted && (i == 0 || syms[i-1].Start <= syms[i].Start)
	}
	if !sorted {
		slices.SortStableFunc(syms, func(a, b Symbol) int { return cmp.Compare(a.Start, b.Start) })
	}
	maxEnd := make([]uint64, len(syms))
	var m uint64
	for i, s := range syms {
		m = max(m, s.End())
		maxEnd[i] = m
	}
	return &Table{syms: syms, maxEnd: maxEnd}
}

// Len is the number of symbols.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.syms)
}

// Lookup returns the symbol covering addr (the newest one when several do).
func (t *Table) Lookup(addr uint64) (Symbol, bool) {
	if t == nil {
		return Symbol{}, false
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].Start > addr })
	best := -1
	for j := i - 1; j >= 0 && j >= i-maxOverlapScan && t.maxEnd[j] > addr; j-- {
		s := &t.syms[j]
		if addr-s.Start < s.Size && (best < 0 || s.seq > t.syms[best].seq) {
			best = j
		}
	}
	if best < 0 {
		return Symbol{}, false
	}
	return t.syms[best], true
}
