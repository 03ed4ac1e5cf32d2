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
		if out, err, ok := cu.appendFuncFrames(d, dst, pc); ok {
			return out, err
		}
		u = cu.buildLookup(d)
	}
	return u.appendFrames(dst, pc)
}

// appendDecodedFrames appends the frames at pc from what is decoded
// already; ok is false when the answer needs decoding.
func (d *dwarfFile) appendDecodedFrames(dst []Frame, pc uint64) (_ []Frame, err error, ok bool) {
	if !d.indexed.Load() {
		return dst, nil, false
	}
	i := d.cuMap.find(pc)
	if i < 0 || int(i) >= len(d.units) {
		return dst, nil, true
	}
	cu := d.units[i]
	if u := cu.fast.Load(); u != nil {
		dst, err = u.appendFrames(dst, pc)
		return dst, err, true
	}
	p := cu.part.Load()
	if p == nil {
		return dst, nil, false
	}
	t := p.du.funcTreeAt(pc, false)
	if t == nil {
		return dst, nil, false
	}
	dst, err = appendNodeFrames(dst, t, p.lines, t.seg.find(pc), rowAt(p.lines, pc), pc, p.err)
	return dst, err, true
}

// rowAt is lt.find(pc), -1 for a unit without a line table.
func rowAt(lt *lineTable, pc uint64) int {
	if lt == nil {
		return -1
	}
	return lt.find(pc)
}

// partLookup is what a unit decoded one function at a time answers with
// besides its functions' trees.
type partLookup struct {
	du    *compUnit // the unit with the DIEs (the split unit of a skeleton)
	lines *lineTable
	err   error // the line table's
}

// appendFuncFrames answers from the tree of the one function covering pc
// in a large unit (funcscopes.go); ok is false when the whole unit's tree
// must answer.
func (cu *compUnit) appendFuncFrames(d *dwarfFile, dst []Frame, pc uint64) (_ []Frame, _ error, ok bool) {
	p := cu.part.Load()
	if p == nil {
		du, err := cu.dieUnit()
		if err != nil || du == nil || du.funcScopes() == nil {
			return dst, nil, false
		}
		lt, err := cu.lineTable()
		p = &partLookup{du: du, lines: lt, err: err}
		cu.part.Store(p)
	}
	t := p.du.funcTreeAt(pc, true)
	if t == nil {
		return dst, nil, false
	}
	out, err := appendNodeFrames(dst, t, p.lines, t.seg.find(pc), rowAt(p.lines, pc), pc, p.err)
	return out, err, true
}

// appendFrames appends the frames at pc from a decoded unit.
func (u *unitLookup) appendFrames(dst []Frame, pc uint64) ([]Frame, error) {
	node, row := u.at(pc)
	// A unit decoded only in part answers what it can, with its error.
	return appendNodeFrames(dst, u.tree, u.lines, node, row, pc, u.err)
}

// appendNodeFrames appends the frames of scope node and line row at pc
// (either may be -1), innermost first; firstErr goes with the answer.
func appendNodeFrames(dst []Frame, tree *scopeTree, lt *lineTable, node int32, row int, pc uint64, firstErr error) ([]Frame, error) {
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
		f.DeclLine = nd.name.declLine
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
