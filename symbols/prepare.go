package symbols

import (
	"runtime/debug"
	"sort"
)

// prepareUnitBytes bounds the DIEs whose function index Prepare builds: a
// few milliseconds of one core (Rust's std unit, 800 KB, takes 5).
const prepareUnitBytes = 8 << 20

// Prepare reads ahead what the first lookups in b will need whatever they
// look up: the index of its DWARF units by address (from the persisted
// cache when there is one); for an executable (exe set), also its symbol
// table (the start-up code at the bottom of every stack has no DWARF) and
// the function index of its large units (funcscopes.go: Rust's std),
// largest first, up to a bound. A debugger calls it, in a goroutine of its
// own, while the program it launched starts, so that its first stop finds
// these ready (lldb reads its targets' symbols during launch too). It is
// safe to call with lookups under way; an unreadable file is left for them
// to report.
func (b *Binary) Prepare(exe bool) {
	var err error
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if b.dw != nil {
		b.dw.index()
	}
	if !exe {
		return
	}
	b.symbols()
	if b.dw != nil {
		b.dw.prepareUnits(prepareUnitBytes)
	}
}

// prepareUnits builds the function index of the units large enough to
// have one, largest first, until budget bytes of DIEs are indexed.
func (d *dwarfFile) prepareUnits(budget uint64) {
	var large []*compUnit
	for _, cu := range d.units {
		if cu.hdr.End > cu.hdr.DataOffset && cu.hdr.End-cu.hdr.DataOffset >= funcScopesMinSize {
			large = append(large, cu)
		}
	}
	size := func(cu *compUnit) uint64 { return cu.hdr.End - cu.hdr.DataOffset }
	// Largest first: they cost a first stop the most.
	sort.SliceStable(large, func(i, j int) bool { return size(large[i]) > size(large[j]) })
	for _, cu := range large {
		if size(cu) > budget {
			continue
		}
		budget -= size(cu)
		if du, err := cu.dieUnit(); err == nil && du != nil {
			du.funcScopes()
		}
	}
}

// PrepareFunction reads ahead what a first stack's lookups in the function
// called name (an ELF function symbol: FunctionAddress) need: its unit's
// abbreviations and unit DIE, the function's scopes (its subtree, or the
// unit's whole tree for a small unit), the unit's line table and its call
// sites (the tail-call check of a caller frame). A debugger calls it, with
// Prepare, for the functions every stack runs through (the C library's
// start-up code, the executable's main) while its program starts: a first
// stop's walk decoded them before its stackTrace could answer. It reports
// whether b has such a function; an unreadable unit is left for the
// lookups to report.
func (b *Binary) PrepareFunction(name string) bool {
	addr, _, ok := b.FunctionAddress(name)
	if !ok || addr == 0 {
		return false
	}
	var err error
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	// The lookups a caller frame in it makes (LookupCaller, CallSiteAt)
	// decode the same unit, scopes and line table wherever in the
	// function the return address lies.
	b.appendFrames(nil, addr)
	if b.dw != nil {
		b.dw.callSitesOfFunction(addr)
	}
	return true
}
