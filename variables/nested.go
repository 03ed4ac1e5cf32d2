package variables

import (
	"debug/dwarf"
	"sort"
)

// Functions defined inside other functions' DIEs: GCC puts the code of a
// lambda's operator() and of a local class's member functions under the
// class type, inside the enclosing function's subtree
// (main > lexical block > structure type > subprogram), where unitFuncs,
// which reads top-level subprograms only, does not look. They are indexed
// on demand, the first time a pc of the unit is in no top-level function.

// nestedFuncAt returns the subprogram nested anywhere in unit i whose code
// holds pc.
func (r *Reader) nestedFuncAt(pc uint64, i int) (*Scope, error) {
	spans := r.unitNestedFuncs(i)
	j := sort.Search(len(spans), func(j int) bool { return spans[j].lo > pc })
	for k := j - 1; k >= 0 && k >= j-8; k-- {
		if pc < spans[k].hi {
			return r.function(spans[k].off, i)
		}
	}
	return nil, nil
}

// unitNestedFuncs indexes, once, the subprograms with code of unit i that
// are not at its top level (nor in its namespaces).
func (r *Reader) unitNestedFuncs(i int) []funcSpan {
	if r.nestedIdx == nil {
		r.nestedIdx = map[int][]funcSpan{}
	}
	if s, ok := r.nestedIdx[i]; ok {
		return s
	}
	var spans []funcSpan
	rd := r.dieReader()
	rd.Seek(dwarf.Offset(r.units[i].dataOff))
	cu, err := rd.Next()
	// inFunc counts, per open DIE, whether it is (inside) a subprogram.
	var inFunc []bool
	if err == nil && cu != nil && cu.Children {
		inFunc = append(inFunc, false)
		for n := 0; len(inFunc) > 0 && n < maxNestedScan; n++ {
			e, err := rd.Next()
			if err != nil || e == nil {
				break
			}
			if e.Tag == 0 {
				inFunc = inFunc[:len(inFunc)-1]
				continue
			}
			outer := inFunc[len(inFunc)-1]
			if e.Tag == dwarf.TagSubprogram && outer {
				if rs, err := r.rangesOf(e); err == nil {
					for _, rg := range rs {
						if rg[1] > rg[0] && rg[0] != 0 {
							spans = append(spans, funcSpan{rg[0], rg[1], e.Offset})
						}
					}
				}
			}
			if e.Children {
				inFunc = append(inFunc, outer || e.Tag == dwarf.TagSubprogram)
			}
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].lo < spans[b].lo })
	r.nestedIdx[i] = spans
	return spans
}

// maxNestedScan bounds the DIEs one unit's scan reads.
const maxNestedScan = 1 << 24
