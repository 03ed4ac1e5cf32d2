package core

import (
	"fmt"
	"sort"
	"strings"
)

// This file decides, for every address the process had mapped, where its bytes
// come from: the core, a mapped file, or nowhere (with the reason). It is pure
// computation over the program headers and the NT_FILE note, so the rules are
// tested without files.

// load is a PT_LOAD segment with what the core really holds of it.
type load struct {
	Segment
	present  uint64 // bytes of it the core file holds (p_filesz cut to the file)
	declared uint64 // bytes the header says the core holds: min(p_filesz, p_memsz)
}

// area is one region of the memory map: a PT_LOAD, or the part of one that
// one NT_FILE entry covers.
type area struct {
	start, end uint64
	load       int // index into layout.loads, -1 if no PT_LOAD covers it
	file       int // index into layout.files, -1 if anonymous
}

// layout is the memory map of a core and the core's own bytes in it.
type layout struct {
	loads []load
	files []FileMapping
	areas []area // sorted, non-overlapping
}

// newLayout builds the areas from the PT_LOAD segments (in program header
// order) and the NT_FILE entries. coreSize is the core file's size. Problems
// with the segments are appended to *problems.
func newLayout(segs []Segment, files []FileMapping, coreSize uint64, problems *[]Problem) *layout {
	l := &layout{files: files}
	for _, s := range segs {
		if s.Type != ptLoad || s.MemSize == 0 {
			continue
		}
		if s.Vaddr+s.MemSize < s.Vaddr {
			*problems = append(*problems, Problem{Kind: ProblemBadSegment, Offset: -1,
				Err: fmt.Errorf("PT_LOAD at 0x%x of 0x%x bytes wraps past the end of the address space; ignored", s.Vaddr, s.MemSize)})
			continue
		}
		ld := load{Segment: s, declared: min(s.FileSize, s.MemSize)}
		if s.FileSize > s.MemSize {
			*problems = append(*problems, Problem{Kind: ProblemBadSegment, Start: s.Vaddr, End: s.End(), Offset: int64(s.Offset),
				Err: fmt.Errorf("p_filesz 0x%x exceeds p_memsz 0x%x; only p_memsz bytes are used", s.FileSize, s.MemSize)})
		}
		ld.present = ld.declared
		if s.Offset >= coreSize {
			ld.present = 0
		} else if avail := coreSize - s.Offset; ld.present > avail {
			ld.present = avail
		}
		if ld.present < ld.declared {
			*problems = append(*problems, Problem{Kind: ProblemTruncated, Start: s.Vaddr + ld.present, End: s.Vaddr + ld.declared,
				Offset: int64(min(s.Offset+ld.present, 1<<63-1)),
				Err:    fmt.Errorf("segment 0x%x-0x%x (at file offset %d) truncated at file offset %d: the core has %d of its %d bytes", s.Vaddr, s.End(), s.Offset, coreSize, ld.present, ld.declared)})
		}
		l.loads = append(l.loads, ld)
	}

	// Areas: walk the loads by address, clipping any that overlaps the one
	// before it (reported: the earlier one keeps the overlapped addresses, in
	// the map and in reads alike), and split each at NT_FILE entries.
	order := make([]int, len(l.loads))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return l.loads[order[a]].Vaddr < l.loads[order[b]].Vaddr })
	fileOrder := make([]int, len(files))
	for i := range fileOrder {
		fileOrder[i] = i
	}
	sort.SliceStable(fileOrder, func(a, b int) bool { return files[fileOrder[a]].Start < files[fileOrder[b]].Start })

	var covered uint64 // end of the last area
	for _, li := range order {
		ld := l.loads[li]
		start, end := ld.Vaddr, ld.End()
		if start < covered {
			*problems = append(*problems, Problem{Kind: ProblemBadSegment, Start: start, End: min(end, covered), Offset: int64(min(ld.Offset, 1<<63-1)),
				Err: fmt.Errorf("PT_LOAD 0x%x-0x%x overlaps an earlier segment", start, end)})
			start = covered
		}
		if start >= end {
			continue
		}
		l.splitByFiles(start, end, li, fileOrder)
		covered = end
	}
	// NT_FILE entries that no PT_LOAD covers still belong in the map.
	for _, fi := range fileOrder {
		f := files[fi]
		for _, gap := range l.uncovered(f.Start, f.End) {
			l.areas = append(l.areas, area{start: gap[0], end: gap[1], load: -1, file: fi})
		}
	}
	sort.Slice(l.areas, func(a, b int) bool { return l.areas[a].start < l.areas[b].start })
	return l
}

// splitByFiles appends the areas of [start, end) of load li.
func (l *layout) splitByFiles(start, end uint64, li int, fileOrder []int) {
	cur := start
	i := sort.Search(len(fileOrder), func(k int) bool { return l.files[fileOrder[k]].End > start })
	for ; i < len(fileOrder) && cur < end; i++ {
		f := l.files[fileOrder[i]]
		if f.Start >= end {
			break
		}
		lo, hi := max(f.Start, cur), min(f.End, end)
		if lo >= hi {
			continue // overlaps an earlier entry; the earlier one names it
		}
		if lo > cur {
			l.areas = append(l.areas, area{start: cur, end: lo, load: li, file: -1})
		}
		l.areas = append(l.areas, area{start: lo, end: hi, load: li, file: fileOrder[i]})
		cur = hi
	}
	if cur < end {
		l.areas = append(l.areas, area{start: cur, end: end, load: li, file: -1})
	}
}

// uncovered returns the parts of [start, end) that no area built from a
// PT_LOAD covers. The areas are in address order at this point (those from
// NT_FILE alone, appended after, are skipped).
func (l *layout) uncovered(start, end uint64) [][2]uint64 {
	var out [][2]uint64
	cur := start
	i := sort.Search(len(l.areas), func(i int) bool { return l.areas[i].end > start })
	for _, a := range l.areas[i:] {
		if a.end <= cur || a.load < 0 {
			continue
		}
		if a.start >= end {
			break
		}
		if a.start > cur {
			out = append(out, [2]uint64{cur, min(a.start, end)})
		}
		cur = max(cur, a.end)
		if cur >= end {
			return out
		}
	}
	if cur < end {
		out = append(out, [2]uint64{cur, end})
	}
	return out
}

// coreBytes returns the range of area a whose bytes the core holds, as
// [start, end) (empty if none) and the core file offset of start.
func (l *layout) coreBytes(a area) (start, end, offset uint64) {
	if a.load < 0 {
		return a.start, a.start, 0
	}
	ld := l.loads[a.load]
	pe := ld.Vaddr + ld.present
	start, end = a.start, min(a.end, pe)
	if end <= start {
		return a.start, a.start, 0
	}
	return start, end, ld.Offset + (start - ld.Vaddr)
}

// missing describes the parts of area a the core does not hold: lost to
// truncation ([start, truncEnd)) and never dumped ([truncEnd, a.end)).
func (l *layout) missing(a area) (start, truncEnd uint64) {
	if a.load < 0 {
		return a.start, a.start
	}
	ld := l.loads[a.load]
	pe, de := ld.Vaddr+ld.present, ld.Vaddr+ld.declared
	start = max(a.start, min(pe, a.end))
	truncEnd = max(start, min(de, a.end))
	return start, truncEnd
}

// trimDeleted strips the " (deleted)" the kernel appends to the path of a
// file that was unlinked while mapped.
func trimDeleted(path string) (string, bool) {
	p, ok := strings.CutSuffix(path, " (deleted)")
	return p, ok
}
