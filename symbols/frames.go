package symbols

import "errors"

// appendFrames appends the frames at pc from DWARF; nothing when no unit
// covers pc.
func (d *dwarfFile) appendFrames(dst []Frame, pc uint64) ([]Frame, error) {
	cu := d.unitAt(pc)
	if cu == nil {
		return dst, nil
	}
	u := cu.fast.Load()
	if u == nil {
		u = cu.buildLookup(d)
	}
	return u.appendFrames(dst, pc)
}

// decodedUnitAt returns the decoded map of the unit covering pc without
// decoding anything: ok is false when the index or the unit is not decoded
// yet; u is nil (with ok) when no unit covers pc.
func (d *dwarfFile) decodedUnitAt(pc uint64) (u *unitLookup, ok bool) {
	if !d.indexed.Load() {
		return nil, false
	}
	i := d.cuMap.find(pc)
	if i < 0 || int(i) >= len(d.units) {
		return nil, true
	}
	u = d.units[i].fast.Load()
	return u, u != nil
}

// appendFrames appends the frames at pc from a decoded unit.
func (u *unitLookup) appendFrames(dst []Frame, pc uint64) ([]Frame, error) {
	// A unit decoded only in part answers what it can, with its error.
	firstErr := u.err
	tree, lt := u.tree, u.lines
	node, row := u.at(pc)
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

// buildLookup decodes the unit's scope tree and line table and publishes
// their combined address map (once; concurrent callers may both build it,
// which is harmless: the decoded parts are shared through sync.Once).
func (cu *compUnit) buildLookup(d *dwarfFile) *unitLookup {
	var errs []error
	lt, err := cu.lineTable()
	errs = append(errs, err)
	var tree *scopeTree
	du, err := cu.dieUnit()
	if errors.Is(err, ErrNoDWO) {
		// Missing split DWARF is missing debug info, not an error: the
		// skeleton's lines and the symbol table still answer. Said once.
		d.warnOnce(err)
		err = nil
	}
	errs = append(errs, err)
	if du != nil {
		tree, err = du.scopeTree()
		errs = append(errs, err)
	}
	u := newUnitLookup(tree, lt)
	u.err = errors.Join(errs...)
	if e, ok := u.err.(interface{ Unwrap() []error }); ok && len(e.Unwrap()) == 1 {
		u.err = e.Unwrap()[0]
	}
	cu.fast.Store(u)
	return u
}
