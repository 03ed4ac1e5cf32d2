package variables

import (
	"debug/dwarf"
	"sort"
)

// FunctionType returns the type of the function whose code contains pc
// (link-time), as gdb prints a function's value: its return type and its
// parameters' types in order ({int (int, int)}; a C++ member's this
// included, {int (Counter * const, int)}), variadic when the DIE says so.
// Nil and no error when no function's DWARF covers pc.
func (r *Reader) FunctionType(pc uint64) (t *Type, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, errPanic("function type", p)
		}
	}()
	var off dwarf.Offset
	found := false
	for _, ui := range r.unitsAtPC(pc) {
		spans := r.unitFuncs(ui)
		i := sort.Search(len(spans), func(i int) bool { return spans[i].lo > pc })
		for j := i - 1; j >= 0 && j >= i-8; j-- {
			if pc < spans[j].hi {
				off, found = spans[j].off, true
				break
			}
		}
		if found {
			break
		}
	}
	if !found {
		if c := r.childAt(pc); c != nil {
			r.mu.Unlock()
			defer r.mu.Lock()
			return c.FunctionType(pc)
		}
		return nil, nil
	}
	e, rd, err := r.entryAt(off)
	if err != nil {
		return nil, err
	}
	// Offset: the subprogram's DIE (no type's), so that TypeString
	// knows the unit's language (fn (i32) -> i32 in a Rust unit).
	t = &Type{Offset: r.pub(off), Kind: KindFunction, Size: -1, Count: -1, Elem: voidType}
	if te := r.followEntry(e, dwarf.AttrType); te != nil {
		if t.Elem, err = r.typeOf(te, 0); err != nil {
			return nil, err
		}
		if t.Elem == nil {
			t.Elem = voidType
		}
	}
	// The concrete DIE lists the parameters (an out-of-line C++ member
	// its artificial this); an abstract origin's when it has none.
	params := func(x *entry, xr *dieReader) error {
		return r.eachChild(x, xr, func(c *entry) error {
			switch c.Tag {
			case dwarf.TagFormalParameter:
				var p *Type
				if te := r.followEntry(c, dwarf.AttrType); te != nil {
					p, err = r.typeOf(te, 0)
					if err != nil {
						return err
					}
				}
				t.Params = append(t.Params, p)
			case dwarf.TagUnspecifiedParameters:
				t.Variadic = true
			}
			return nil
		})
	}
	if err := params(e, rd); err != nil {
		return nil, err
	}
	if len(t.Params) == 0 && !t.Variadic {
		for hops := 0; hops < 4; hops++ {
			o, ok := r.originEntry(e)
			if !ok {
				break
			}
			_, ord, err := r.entryAt(o.Offset)
			if err != nil {
				break
			}
			if err := params(o, ord); err != nil {
				return nil, err
			}
			if len(t.Params) > 0 || t.Variadic {
				break
			}
			e = o
		}
	}
	return t, nil
}
