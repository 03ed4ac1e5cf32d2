package variables

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"sort"

	dw "github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/symbols"
)

// Split DWARF (-gsplit-dwarf): the binary's skeleton units only say where a
// unit's code is and which .dwo file describes it. Each .dwo gets a Reader
// of its own (a child of the binary's), and the DIE offsets children hand
// out are tagged with the child's number in their high bits, so that every
// offset a Reader returns (Type.Offset, Variable.Offset...) names one DIE of
// one file and can be given back to the binary's Reader.

const (
	childShift = 40
	childMask  = 1<<childShift - 1
)

// pub tags an offset of this Reader's file for the outside world.
func (r *Reader) pub(off dwarf.Offset) uint64 { return uint64(off) | r.tag }

// root returns the Reader of the binary (a split unit's parent).
func (r *Reader) root() *Reader {
	if r.parent != nil {
		return r.parent
	}
	return r
}

// real strips a tag.
func (r *Reader) real(die uint64) dwarf.Offset { return dwarf.Offset(die & childMask) }

// child returns the child Reader a tagged offset belongs to.
func (r *Reader) child(off uint64) (*Reader, uint64, bool) {
	k := off >> childShift
	if k == 0 || r.tag != 0 {
		return nil, 0, false
	}
	cs := r.loadChildren()
	if int(k-1) >= len(cs) {
		return nil, 0, false
	}
	return cs[k-1], off & childMask, true
}

// childAt returns the child Reader of the split unit covering pc.
func (r *Reader) childAt(pc uint64) *Reader {
	if r.tag != 0 || r.splitUnits == nil {
		return nil
	}
	cs := r.loadChildren()
	i := sort.Search(len(r.childSpans), func(i int) bool { return r.childSpans[i].lo > pc })
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if pc < r.childSpans[j].hi {
			return cs[r.childSpans[j].unit]
		}
	}
	return nil
}

// loadChildren opens, once, a Reader per split unit.
func (r *Reader) loadChildren() []*Reader {
	r.childOnce.Do(func() {
		if r.splitUnits == nil {
			return
		}
		units, err := r.splitUnits()
		if err != nil {
			r.childErr = err
		}
		for _, su := range units {
			k := len(r.children) + 1
			c, err := r.newChild(su)
			if err != nil {
				r.childErr = errors.Join(r.childErr, fmt.Errorf("%s: %w", su.DWOPath, err))
				continue
			}
			c.tag = uint64(k) << childShift
			c.cuOnce.Do(func() {
				// The split unit's code is its skeleton's; DWARF 4 type
				// units appended after .debug_info (which read as compile
				// units) have none.
				infoLen := uint64(len(su.Sections[".debug_info"]))
				for i, u := range c.units {
					if (u.unitType == 5 || u.unitType == utCompile) && u.off < infoLen {
						for _, rg := range su.Ranges {
							c.cuSpans = append(c.cuSpans, cuSpan{rg[0], rg[1], i})
						}
					}
				}
				// Lookups search by address; a unit's ranges come in any
				// order (gcc lists .text.startup's after .text's).
				sort.Slice(c.cuSpans, func(i, j int) bool { return c.cuSpans[i].lo < c.cuSpans[j].lo })
			})
			for _, rg := range su.Ranges {
				r.childSpans = append(r.childSpans, cuSpan{rg[0], rg[1], len(r.children)})
			}
			r.children = append(r.children, c)
		}
		sort.Slice(r.childSpans, func(i, j int) bool { return r.childSpans[i].lo < r.childSpans[j].lo })
	})
	return r.children
}

// newChild makes the Reader of one split unit: DWARF 5, or GNU split
// DWARF 4 (gcc -gsplit-dwarf -gdwarf-4), the pre-standard form of what
// DWARF 5 made split units. The reader decodes the GNU index forms
// natively; what differs is read here and in rangeList and locationOf: a
// GNU unit's location lists are in .debug_loc.dwo with GNU entry kinds, its
// DW_AT_ranges are offsets into the binary's .debug_ranges from the
// skeleton's DW_AT_GNU_ranges_base, and its .debug_str_offsets has no
// header. Either kind of split unit indexes the binary's .debug_addr from
// the skeleton's DW_AT_addr_base and has the skeleton's low pc as base.
func (r *Reader) newChild(su symbols.SplitUnit) (*Reader, error) {
	sec := func(n string) []byte { return su.Sections[n] }
	hdr, err := dw.ReadUnitHeader(".debug_info.dwo", sec(".debug_info"), 0, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDWARF, err)
	}
	s := Sections{Info: sec(".debug_info"), Abbrev: sec(".debug_abbrev"),
		Str: sec(".debug_str"), StrOffsets: sec(".debug_str_offsets"),
		LocLists: sec(".debug_loclists"), RngLists: sec(".debug_rnglists"), Line: sec(".debug_line"),
		Addr: r.addr}
	if hdr.Version < 5 {
		s.Loc = sec(".debug_loc")
		s.Types = sec(".debug_types")
	}
	c, err := NewFromSections(s)
	if err != nil {
		return nil, err
	}
	c.parent = r
	for i := range c.units {
		c.units[i].addrBase, c.units[i].addrBaseSet, c.units[i].lowPC = su.AddrBase, true, su.LowPC
	}
	if hdr.Version < 5 {
		c.gnuSplit4, c.ranges, c.rangesBase, c.splitLowPC = true, r.ranges, su.RangesBase, su.LowPC
	}
	return c, nil
}

// splitSource is how New reaches a binary's split units.
func splitSource(b *symbols.Binary) func() ([]symbols.SplitUnit, error) {
	return b.SplitUnits
}
