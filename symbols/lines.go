package symbols

import (
	"sort"

	"github.com/sondedbg/sonde/dwarf"
)

// lineTable is a unit's line-number matrix with its sequences sorted by
// address, so that one binary search finds the row for an address.
type lineTable struct {
	files []string
	rows  []dwarf.LineRow
	addrs addrIndex // rows[i].Addr, for the search
}

func newLineTable(t *dwarf.LineTable) *lineTable {
	lt := &lineTable{files: t.Files}
	// Split into sequences (each ends with an end_sequence row), sort them by
	// start address, and concatenate.
	type seq struct{ i, j int }
	var seqs []seq
	start := 0
	for i, r := range t.Rows {
		if r.Flags&dwarf.RowEndSequence != 0 {
			seqs = append(seqs, seq{start, i + 1})
			start = i + 1
		}
	}
	// Rows after the last end_sequence belong to no complete sequence: a
	// truncated program. They are dropped, as a sequence has no known end.
	sorted := true
	for k := 1; k < len(seqs); k++ {
		if t.Rows[seqs[k].i].Addr < t.Rows[seqs[k-1].i].Addr {
			sorted = false
			break
		}
	}
	if !sorted {
		sort.SliceStable(seqs, func(a, b int) bool { return t.Rows[seqs[a].i].Addr < t.Rows[seqs[b].i].Addr })
	}
	// Filter in place when the sequences are already in address order (the
	// usual case): the filter never writes ahead of what it reads.
	// gdb keeps one table per file name: two file entries with the same
	// name (DWARF 5 entries 0 and 1) are one file.
	canon := make([]uint32, len(t.Files))
	first := make(map[string]uint32, len(t.Files))
	for i, f := range t.Files {
		if j, ok := first[f]; ok {
			canon[i] = j
		} else {
			first[f] = uint32(i)
			canon[i] = uint32(i)
		}
	}
	rows := t.Rows[:0]
	if !sorted {
		rows = make([]dwarf.LineRow, 0, len(t.Rows))
	}
	for _, s := range seqs {
		part := t.Rows[s.i:s.j]
		// Rows of a sequence must not go backwards; a corrupt one is sorted
		// rather than trusted (the end row stays last).
		if !sort.SliceIsSorted(part, func(a, b int) bool { return part[a].Addr < part[b].Addr }) {
			part = append([]dwarf.LineRow(nil), part...)
			sort.SliceStable(part, func(a, b int) bool {
				ea, eb := part[a].Flags&dwarf.RowEndSequence != 0, part[b].Flags&dwarf.RowEndSequence != 0
				if ea != eb {
					return eb
				}
				return part[a].Addr < part[b].Addr
			})
		}
		rows = appendGDBRows(rows, part, canon)
	}
	lt.rows = rows
	keys := make([]uint64, len(rows))
	for i := range rows {
		keys[i] = rows[i].Addr
	}
	lt.addrs = newAddrIndex(keys)
	return lt
}

// find returns the index of the row describing pc, or -1. Conventions (gdb's):
// an address at or past its sequence's end has no row; where several rows
// share the address, the last is_stmt one wins (the last row when none is).
func (lt *lineTable) find(pc uint64) int {
	return lt.pick(lt.addrs.floor(pc))
}

// pick applies gdb's choice to row i, the last row at or before an address.
func (lt *lineTable) pick(i int) int {
	rows := lt.rows
	if i < 0 || rows[i].Flags&dwarf.RowEndSequence != 0 {
		return -1
	}
	if rows[i].Flags&dwarf.RowStmt == 0 {
		for j := i - 1; j >= 0 && rows[j].Addr == rows[i].Addr && rows[j].Flags&dwarf.RowEndSequence == 0; j-- {
			if rows[j].Flags&dwarf.RowStmt != 0 {
				return j
			}
		}
	}
	return i
}

func (lt *lineTable) file(i uint32) string {
	if lt == nil || int(i) >= len(lt.files) {
		return ""
	}
	return lt.files[i]
}

// lineTable returns the unit's line table (a skeleton's for split units),
// decoding it on first use; nil when the unit has none.
func (cu *compUnit) lineTable() (*lineTable, error) {
	cu.linesOnce.Do(func() {
		if err := cu.readUnitDIE(); err != nil {
			cu.linesErr = err
			return
		}
		if !cu.hasStmtList {
			return
		}
		d := cu.file
		t, err := dwarf.ParseLineTable(d.section(secLine), cu.stmtList, cu.compDir, cu.hdr.AddrSize,
			dwarf.LineStrings{Str: d.section(secStr), LineStr: d.section(secLineStr)}, false)
		if t != nil {
			cu.lines = newLineTable(t)
		}
		if err != nil {
			cu.linesErr = cu.fail("read line table", err)
		}
	})
	return cu.lines, cu.linesErr
}

// appendGDBRows appends a sequence's rows as gdb records them, so that
// lookups agree with gdb where producers emit several rows per address:
//   - a row repeating the previous row's file and line is dropped when that
//     line has had a non-zero discriminator (gdb PR 17276);
//   - a non-statement row that switches file at an address that already
//     has a statement row is dropped;
//   - a row that switches file replaces the previous file's rows at its
//     address (gdb ends the previous file's range there);
//   - line-0 rows (code attributed to no line) are dropped;
//   - rows at the end-of-sequence address are dropped.
func appendGDBRows(out, seq []dwarf.LineRow, canon []uint32) []dwarf.LineRow {
	file := func(r *dwarf.LineRow) uint32 {
		if int(r.File) < len(canon) {
			return canon[r.File]
		}
		return r.File
	}
	const noFile = ^uint32(0)
	lastFile, lastLine := noFile, uint32(0)
	lastAddr := ^uint64(0)
	seenLine, nonZeroDisc := uint32(0), false
	stmtAtAddr := false
	start := len(out)
	for _, r := range seq {
		if r.Flags&dwarf.RowEndSequence != 0 {
			// Rows at the end address describe no code: gdb drops them.
			for len(out) > start && out[len(out)-1].Addr == r.Addr {
				out = out[:len(out)-1]
			}
			out = append(out, r)
			break
		}
		if r.Line != seenLine {
			nonZeroDisc = r.Discriminator != 0
			seenLine = r.Line
		} else if r.Discriminator != 0 {
			nonZeroDisc = true
		}
		if r.Addr != lastAddr {
			stmtAtAddr = false
		}
		stmt := r.Flags&dwarf.RowStmt != 0
		fileChanged := file(&r) != lastFile
		ignore := r.Line == 0 || (fileChanged && r.Addr == lastAddr && !stmt && stmtAtAddr)
		stmtAtAddr = stmtAtAddr || stmt
		if !ignore {
			if fileChanged && lastFile != noFile {
				for len(out) > start && out[len(out)-1].Addr == r.Addr && file(&out[len(out)-1]) == lastFile {
					out = out[:len(out)-1]
				}
			}
			if fileChanged || r.Line != lastLine || !nonZeroDisc {
				out = append(out, r)
			}
			lastFile, lastLine = file(&r), r.Line
		}
		lastAddr = r.Addr
	}
	return out
}
