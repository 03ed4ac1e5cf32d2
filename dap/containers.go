package dap

import (
	"strconv"
	"strings"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/variables"
)

// Library containers (std::map, std::list, smart pointers, Rust's HashMap,
// ...) are recognised by package variables (Reader.Container); here they
// are presented: the summary as the value, the elements as children. An
// element lives in target memory where no C expression names it (a tree
// node), so its expression is a cast of its address to its DWARF type,
// (*(${t:0xDIE}*)0xADDR), which typeSymbol resolves: the child evaluates,
// expands and can be set like any other.

// typeSymbol resolves ${t:0xDIE} to the type of r's DIE at that offset.
func typeSymbol(r *variables.Reader) func(string) (expr.SymbolRef, error) {
	return func(id string) (expr.SymbolRef, error) {
		hex, ok := strings.CutPrefix(id, "t:0x")
		if !ok {
			return expr.SymbolRef{}, errorf("unknown reference ${%s}", id)
		}
		off, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			return expr.SymbolRef{}, errorf("bad type reference ${%s}", id)
		}
		t, err := r.Type(off)
		if err != nil || t == nil {
			return expr.SymbolRef{}, errorf("no type at DIE 0x%x", off)
		}
		return expr.SymbolRef{Type: t}, nil
	}
}

// containerOf recognises a value as a library container.
func containerOf(fe *frameEnv, v variables.Value) (*variables.Container, bool) {
	if fe == nil || fe.reader == nil || fe.env == nil || fe.env.Frame == nil || v.Bytes == nil {
		return nil, false
	}
	t := v.Type.Strip()
	if t == nil || !t.IsComposite() {
		return nil, false
	}
	return fe.reader.Container(v, fe.env.Frame)
}

// containerParts gives a container variable its children's count (indexed:
// paged by the client) or, when it has none, no children.
func containerParts(dv *godap.Variable, fe *frameEnv, v variables.Value) {
	if dv.VariablesReference == 0 || isVector(v.Type.Strip()) || isRustVec(v.Type.Strip()) {
		return
	}
	c, ok := containerOf(fe, v)
	if !ok || c.Count == 0 {
		return
	}
	dv.NamedVariables = 0
	if c.Indexed {
		dv.IndexedVariables = c.Count
	}
}

// containerChildren names a container's children start.. (count 0: all,
// up to maxChildren) by their address expressions; false when v is not a
// container with children.
func containerChildren(fe *frameEnv, v variables.Value, start, count int) (names, exprs []string, ok bool) {
	c, ok := containerOf(fe, v)
	if !ok || c.Count == 0 {
		return nil, nil, false
	}
	if count <= 0 {
		count = c.Count
	}
	kids, err := c.Children(start, min(count, maxChildren))
	if err != nil && len(kids) == 0 {
		return nil, nil, false
	}
	for _, k := range kids {
		name := k.Name
		if k.Key != nil {
			name = "[" + fe.reader.Format(*k.Key, nil, fe.env.Frame, variables.FormatOptions{Pretty: true, UTF8: true}) + "]"
		}
		names = append(names, name)
		exprs = append(exprs, addressExpr(k.Value))
	}
	return names, exprs, true
}

// addressExpr names a value in memory by its type's DIE and its address,
// a computed count by its value ("" when it has neither).
func addressExpr(v variables.Value) string {
	if v.Place == variables.PlaceComputed && v.Type.IsInteger() && len(v.Bytes) == 8 {
		// A count the printer computed (Rc's weak count): its value.
		if v.Type.IsSigned() {
			n, _ := v.Int()
			return strconv.FormatInt(n, 10)
		}
		u, _ := v.Uint()
		return strconv.FormatUint(u, 10)
	}
	if v.Place != variables.PlaceMemory || v.Type == nil || v.Type.Offset == 0 {
		return ""
	}
	return "(*(${t:0x" + strconv.FormatUint(v.Type.Offset, 16) + "}*)0x" + strconv.FormatUint(v.Address, 16) + ")"
}

// resultValue is an evaluated expression as a variables.Value.
func resultValue(res *expr.Result, t *variables.Type, b []byte) variables.Value {
	v := variables.Value{Type: t, Bytes: b, Address: res.Address, Place: variables.PlaceComputed}
	if res.HasAddress {
		v.Place = variables.PlaceMemory
	}
	return v
}

// containerHasChildren reports whether v is a container whose children can
// be listed.
func containerHasChildren(fe *frameEnv, v variables.Value) bool {
	_, _, ok := containerChildren(fe, v, 0, 1)
	return ok
}

// containerIndexed reports whether v is a container of indexed elements.
func containerIndexed(fe *frameEnv, v variables.Value) bool {
	c, ok := containerOf(fe, v)
	return ok && c.Indexed
}

// resultParts gives an evaluated vector or container its element count
// (evaluate, hover and watch page them as variables does).
func resultParts(dv *godap.Variable, fe *frameEnv, res *expr.Result) {
	vectorCount(dv, res.Type, res.Value)
	containerParts(dv, fe, resultValue(res, res.Type, res.Value))
}
