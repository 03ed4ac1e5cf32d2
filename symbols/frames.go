package symbols

import "errors"

// appendFrames appends the frames at pc from DWARF; nothing when no unit
// covers pc.
func (d *dwarfFile) appendFrames(dst []Frame, pc uint64) ([]Frame, error) {
	cu := d.unitAt(pc)
	if cu == nil {
		return dst, nil
	}
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	lt, err := cu.lineTable()
	keep(err)
	var tree *scopeTree
	du, err := cu.dieUnit()
	if errors.Is(err, ErrNoDWO) {
		// Missing split DWARF is missing debug info, not an error: the
		// skeleton's lines and the symbol table still answer. Said once.
		d.warnOnce(err)
		err = nil
	}
	keep(err)
	if du != nil {
		tree, err = du.scopeTree()
		keep(err)
	}
	node := int32(-1)
	if tree != nil {
		node = tree.seg.find(pc)
	}
	row := -1
	if lt != nil {
		row = lt.find(pc)
	}
	if node < 0 && row < 0 {
		return dst, firstErr
	}
	var f Frame
	if row >= 0 {
		r := &lt.rows[row]
		f.File, f.Line, f.Column, f.Discriminator = lt.file(r.File), int(r.Line), int(r.Column), int(r.Discriminator)
	}
	for n := node; n >= 0; {
		nd := &tree.nodes[n]
		f.Function = nd.name.Display()
		f.LinkageName = nd.name.linkage
		f.Inlined = nd.depth > 0
		for _, r := range tree.ranges[nd.r0:nd.r1] {
			if pc >= r.Lo && pc < r.Hi {
				f.Start = r.Lo
				break
			}
		}
		dst = append(dst, f)
		if nd.parent < 0 || nd.parent >= n {
			return dst, firstErr
		}
		f = Frame{File: lt.file(nd.callFile), Line: int(nd.callLine), Column: int(nd.callCol)}
		n = nd.parent
	}
	if node < 0 {
		dst = append(dst, f)
	}
	return dst, firstErr
}
