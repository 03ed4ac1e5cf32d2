package dap

import (
	"encoding/binary"
	"strconv"
	"strings"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/variables"
)

// libstdc++'s std::vector<T> is shown as gdb's printer shows it, "std::vector
// of length N", and expands to its elements [0], [1], ... (paged, as arrays
// are), each named by the expression (v)._M_impl._M_start[i]; its raw
// members are what it showed before, a tree of allocator bases an editor
// user does not want to dig through.

// vectorLayout finds a std::vector's _M_start and _M_finish pointers (in
// _Vector_base::_M_impl, through base classes) and its element type.
func vectorLayout(t *variables.Type) (start, finish int64, elem *variables.Type, ok bool) {
	if t == nil || !strings.HasPrefix(t.Name, "vector<") || !t.IsComposite() {
		return 0, 0, nil, false
	}
	var walk func(t *variables.Type, at int64, depth int) bool
	walk = func(t *variables.Type, at int64, depth int) bool {
		if t == nil || depth > 6 {
			return false
		}
		s, okS := fieldOffset(t, "_M_start")
		f, okF := fieldOffset(t, "_M_finish")
		if okS && okF {
			pt, _ := memberType(t, "_M_start")
			if pt == nil || pt.Kind != variables.KindPointer || pt.Elem.Strip() == nil || pt.Elem.ByteSize() <= 0 {
				return false
			}
			start, finish, elem = at+s, at+f, pt.Elem
			return true
		}
		for _, fl := range t.Fields {
			if (fl.Base || fl.Name == "_M_impl") && fl.OffsetExpr == nil && fl.BitSize == 0 {
				if walk(fl.Type.Strip(), at+fl.Offset, depth+1) {
					return true
				}
			}
		}
		return false
	}
	ok = walk(t, 0, 0)
	return start, finish, elem, ok
}

// vectorLength returns the element count of a std::vector's value.
func vectorLength(t *variables.Type, b []byte) (int, bool) {
	start, finish, elem, ok := vectorLayout(t)
	if !ok || start < 0 || finish < 0 || start+8 > int64(len(b)) || finish+8 > int64(len(b)) {
		return 0, false
	}
	s := binary.LittleEndian.Uint64(b[start:])
	f := binary.LittleEndian.Uint64(b[finish:])
	size := uint64(elem.ByteSize())
	if f < s || (f-s)%size != 0 || (f-s)/size > 1<<31 {
		return 0, false
	}
	return int((f - s) / size), true
}

// vectorSummary prints a std::vector's value.
func vectorSummary(t *variables.Type, b []byte) (string, bool) {
	n, ok := vectorLength(t, b)
	if !ok {
		return "", false
	}
	return "std::vector of length " + strconv.Itoa(n), true
}

// vectorChildren names elements start.. of a std::vector (count 0: all, up
// to maxChildren).
func vectorChildren(paren string, t *variables.Type, b []byte, start, count int) (names, exprs []string, ok bool) {
	n, ok := vectorLength(t, b)
	if !ok {
		return nil, nil, false
	}
	start = max(start, 0)
	if count <= 0 {
		count = n
	}
	count = min(count, maxChildren)
	for i := start; i < n && i < start+count; i++ {
		names = append(names, "["+strconv.Itoa(i)+"]")
		exprs = append(exprs, paren+"._M_impl._M_start["+strconv.Itoa(i)+"]")
	}
	return names, exprs, true
}

// isVector reports whether t is a libstdc++ std::vector.
func isVector(t *variables.Type) bool {
	_, _, _, ok := vectorLayout(t)
	return ok
}

// vectorCount gives a std::vector variable its element count, so that a
// client pages its children.
func vectorCount(dv *godap.Variable, t *variables.Type, b []byte) {
	if dv.VariablesReference == 0 {
		return
	}
	if n, ok := vectorLength(t.Strip(), b); ok {
		dv.IndexedVariables = n
	} else if n, ok := rustVecLength(t.Strip(), b); ok {
		dv.IndexedVariables = n
	}
}
