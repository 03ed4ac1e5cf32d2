package variables

import (
	"math/bits"
	"strconv"
	"strings"
)

// std::variant and std::bitset as libstdc++'s printers show them:
// std::variant<int, std::string> [index 1] = {"x"}, std::bitset = {[1] =
// 1, [8] = 1}.

// variant: _M_index (in _Variant_storage, a base) selects the alternative;
// every alternative lives at _M_u's start (_Variadic_union is a union:
// _M_first, an _Uninitialized<T> holding _M_storage, and _M_rest, the
// union of the others), its type _Uninitialized's _Type.
func (c *containerReader) variant() (*Container, bool) {
	io, it, ok1 := member(c.t, "_M_index")
	uo, ut, ok2 := member(c.t, "_M_u")
	isz := it.ByteSize()
	if !ok1 || !ok2 || isz <= 0 || isz > 8 || io+isz > int64(len(c.v.Bytes)) {
		return nil, false
	}
	var alts []*Type
	var storage []int64
	cur := ut
	for depth := 0; depth < 64; depth++ {
		fo, ft, ok := member(cur, "_M_first")
		if !ok {
			break
		}
		so, st, ok := member(ft, "_M_storage")
		alt := templateParam(ft.Strip(), "_Type")
		if !ok || alt == nil {
			if !ok || strings.HasPrefix(st.Strip().Name, "__aligned_membuf<") {
				return nil, false
			}
			alt = st
		}
		alts, storage = append(alts, alt), append(storage, fo+so)
		_, rt, ok := member(cur, "_M_rest")
		if !ok {
			break
		}
		cur = rt
	}
	if len(alts) == 0 {
		return nil, false
	}
	names := make([]string, len(alts))
	for i, a := range alts {
		names[i] = c.templateArgName(a)
	}
	kind := "std::variant<" + strings.Join(names, ", ") + ">"
	c0 := &Container{Kind: "std::variant", GDB: true, Style: ChildArray}
	idx := le(c.v.Bytes[io : io+isz])
	if idx >= uint64(len(alts)) {
		c0.Summary = kind + " [no contained value]"
		return c0, true
	}
	v, ok := subValue(c.v, uo+storage[idx], alts[idx])
	if !ok {
		return nil, false
	}
	c0.Summary = kind + " [index " + strconv.FormatUint(idx, 10) + "]"
	kids := []Child{{Name: "[contained value]", Value: v}}
	if inner, ok := c.r.Container(v, c.f); ok && inner.GDB && inner.Target == nil && inner.Count > 0 {
		// An alternative with children of its own (gdb: "containing").
		c0.Summary += " containing " + inner.Summary
		c0.Count, c0.Style, c0.Indexed, c0.children = inner.Count, inner.Style, inner.Indexed, inner.children
		return c0, true
	}
	c0.Count = 1
	c0.children = func(int, int) ([]Child, error) { return kids, nil }
	return c0, true
}

// bitsetWord is the type of a bitset's children: the 1 of each set bit.
var bitsetWord = &Type{Kind: KindBase, Name: "long", Size: 8, Encoding: EncSigned}

// bitset: _M_w, one word or an array of words; a child [i] = 1 per set
// bit.
func (c *containerReader) bitset() (*Container, bool) {
	wo, wt, ok := member(c.t, "_M_w")
	ws := wt.Strip()
	if !ok || ws == nil {
		return nil, false
	}
	size := ws.ByteSize()
	wsize := size
	if ws.Kind == KindArray {
		wsize = ws.Elem.ByteSize()
	}
	if wsize <= 0 || wsize > 8 || size <= 0 || wo+size > int64(len(c.v.Bytes)) {
		return nil, false
	}
	var set []int
	for w := int64(0); w < size/wsize; w++ {
		word := le(c.v.Bytes[wo+w*wsize : wo+(w+1)*wsize])
		for word != 0 {
			b := bits.TrailingZeros64(word)
			set = append(set, int(w*wsize*8)+b)
			word &^= 1 << b
		}
	}
	c0 := &Container{Kind: "std::bitset", GDB: true, Summary: "std::bitset", Style: ChildNamed, Indexed: true, Count: len(set)}
	c0.children = func(start, n int) ([]Child, error) {
		out := make([]Child, 0, n)
		for _, b := range set[start : start+n] {
			one := Value{Type: bitsetWord, Bytes: []byte{1, 0, 0, 0, 0, 0, 0, 0}, Place: PlaceComputed}
			out = append(out, Child{Name: elemName(b), Value: one})
		}
		return out, nil
	}
	return c0, true
}

// boolType is the type of std::vector<bool>'s children.
var boolType = &Type{Kind: KindBase, Name: "bool", Size: 1, Encoding: EncBoolean}

// vectorBool: std::vector<bool>, bits in words: _M_impl's _M_start and
// _M_finish (each a word pointer _M_p and a bit _M_offset) and
// _M_end_of_storage (a word pointer).
func (c *containerReader) vectorBool() (*Container, bool) {
	spo, spt, ok1 := path(c.t, "_M_impl", "_M_start", "_M_p")
	soo, _, ok2 := path(c.t, "_M_impl", "_M_start", "_M_offset")
	fpo, _, ok3 := path(c.t, "_M_impl", "_M_finish", "_M_p")
	foo, _, ok4 := path(c.t, "_M_impl", "_M_finish", "_M_offset")
	eo, _, ok5 := path(c.t, "_M_impl", "_M_end_of_storage")
	p := spt.Strip()
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || p == nil || p.Kind != KindPointer || p.Elem.ByteSize() != 8 {
		return nil, false
	}
	sp, _ := c.word(spo)
	fp, _ := c.word(fpo)
	ep, _ := c.word(eo)
	so, ok1 := c.uint32At(soo)
	fo, ok2 := c.uint32At(foo)
	if !ok1 || !ok2 {
		return nil, false
	}
	c0 := &Container{Kind: "std::vector<bool>", GDB: true, Indexed: true, Style: ChildArray}
	if fp < sp || ep < fp || (fp-sp)%8 != 0 || (ep-sp)%8 != 0 || (fp-sp)/8 > 1<<26 || (ep-sp)/8 > 1<<26 || so >= 64 || fo >= 64 {
		c0.Summary = "std::vector<bool> <invalid>"
		return c0, true
	}
	n := int((fp-sp)/8*64) + int(fo) - int(so)
	if n < 0 {
		c0.Summary = "std::vector<bool> <invalid>"
		return c0, true
	}
	c0.Count = n
	c0.Summary = "std::vector<bool> of length " + strconv.Itoa(n) + ", capacity " + strconv.FormatUint((ep-sp)/8*64, 10)
	c0.children = indexed(func(i int) (Value, error) {
		bit := uint64(i) + uint64(so)
		w, err := c.ptrAt(sp + bit/64*8)
		return Value{Type: boolType, Bytes: []byte{byte(w >> (bit % 64) & 1)}, Place: PlaceComputed}, err
	})
	return c0, true
}

// uint32At reads the 4-byte word at off in the value's bytes.
func (c *containerReader) uint32At(off int64) (uint64, bool) {
	if off < 0 || off+4 > int64(len(c.v.Bytes)) {
		return 0, false
	}
	return le(c.v.Bytes[off : off+4]), true
}
