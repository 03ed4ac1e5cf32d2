package symbols

// unitLookup is a unit's address map once its scope tree and line table are
// decoded: one sorted array of boundaries, each giving the innermost scope
// node and the line row (after gdb's row choice) that hold from there to the
// next boundary. A warm lookup is then one search instead of two.
type unitLookup struct {
	tree  *scopeTree
	lines *lineTable
	keys  addrIndex
	spans []nodeRow // parallel to keys
	err   error     // what went wrong decoding the unit, reported with every answer
}

func newUnitLookup(tree *scopeTree, lines *lineTable) *unitLookup {
	u := &unitLookup{tree: tree, lines: lines}
	var segStart []uint64
	var segVal []int32
	if tree != nil {
		segStart, segVal = tree.seg.start, tree.seg.val
	}
	// Distinct row addresses with the row chosen for them.
	var rowAddr []uint64
	var rowPick []int32
	if lines != nil {
		rows := lines.rows
		rowAddr = make([]uint64, 0, len(rows))
		rowPick = make([]int32, 0, len(rows))
		for i := 0; i < len(rows); i++ {
			if i+1 < len(rows) && rows[i+1].Addr == rows[i].Addr {
				continue // the last row of a group of equal addresses decides
			}
			rowAddr = append(rowAddr, rows[i].Addr)
			rowPick = append(rowPick, int32(lines.pick(i)))
		}
	}
	n := len(segStart) + len(rowAddr)
	keys := make([]uint64, 0, n)
	u.spans = make([]nodeRow, 0, n)
	i, j := 0, 0
	curNode, curRow := int32(-1), int32(-1)
	for i < len(segStart) || j < len(rowAddr) {
		var at uint64
		switch {
		case j >= len(rowAddr) || (i < len(segStart) && segStart[i] <= rowAddr[j]):
			at = segStart[i]
		default:
			at = rowAddr[j]
		}
		for i < len(segStart) && segStart[i] == at {
			curNode = segVal[i]
			i++
		}
		for j < len(rowAddr) && rowAddr[j] == at {
			curRow = rowPick[j]
			j++
		}
		keys = append(keys, at)
		u.spans = append(u.spans, nodeRow{curNode, curRow})
	}
	u.keys = newAddrIndex(keys)
	return u
}

// at returns the innermost scope node and the line row for pc (-1: none).
func (u *unitLookup) at(pc uint64) (node int32, row int) {
	i := u.keys.floor(pc)
	if i < 0 {
		return -1, -1
	}
	nr := u.spans[i]
	return nr.node, int(nr.row)
}

// nodeRow is what holds from one boundary to the next: kept together so a
// lookup reads one cache line for both.
type nodeRow struct{ node, row int32 }
