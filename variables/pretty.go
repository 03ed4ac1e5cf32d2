package variables

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
)

// Containers: the library types a C++ or Rust programmer looks into every
// day (libstdc++'s std::map, std::unordered_map, std::list, std::deque,
// smart pointers, std::optional; Rust's HashMap, Rc, Arc, slices) are shown
// as gdb's pretty-printers show them — a summary ("std::map with 3
// elements") and their elements — instead of the implementation's members.
// Layouts are found by member names in DWARF, never by fixed offsets;
// walks over target memory are bounded (element counts capped, linked
// structures checked for cycles), because a container not yet constructed
// or overwritten holds garbage.

// ChildStyle is how a container's children are printed (gdb's display hint).
type ChildStyle uint8

const (
	// ChildNamed: "name = value" ([0] = 1, get() = 0x..., [contained value] = 5).
	ChildNamed ChildStyle = iota
	// ChildArray: values alone, {1, 2, 3} (std::vector, std::deque).
	ChildArray
	// ChildMap: "[key] = value" (std::map, std::unordered_map, HashMap).
	ChildMap
)

// Container is a value of a library type shown by its contents.
type Container struct {
	// Kind names the library type ("std::map", "HashMap").
	Kind string
	// Summary is what the value prints as on its own ("std::map with 3
	// elements", "std::shared_ptr<Point> (use count 2, weak count 1)").
	Summary string
	// Count is the number of children (elements, or the pointer of a
	// smart pointer); 0: Summary is all there is.
	Count int
	Style ChildStyle
	// Indexed: the children are elements [0], [1], ... (page them).
	Indexed bool
	// GDB is false for what gdb's printers leave alone (std::array): Format
	// then prints the members, as gdb does.
	GDB bool
	// Target, for an iterator, is the element it points to: the value
	// prints as that element (as gdb's printers print iterators), and
	// Summary says why there is none when Target is nil.
	Target *Value
	// children lists children start.. (at most n).
	children func(start, n int) ([]Child, error)
}

// Child is one element of a container: a value in target memory, named
// ("[0]", "get()"), or, in a map, keyed.
type Child struct {
	Name  string
	Key   *Value
	Value Value
}

// Children reads children start.. of c, at most n (bounded by
// MaxContainerElements).
func (c *Container) Children(start, n int) ([]Child, error) {
	if c.children == nil || start >= c.Count || n <= 0 {
		return nil, nil
	}
	start = max(start, 0)
	n = min(n, c.Count-start, MaxContainerElements)
	return c.children(start, n)
}

// MaxContainerElements bounds the elements a container's walk visits.
const MaxContainerElements = 100000

// ErrBadContainer is returned for a container whose memory does not hold a
// consistent structure (not constructed yet, or overwritten).
var ErrBadContainer = errors.New("the container's structure is inconsistent")

// Container recognises v as a library container or smart pointer and
// returns how to show it; false for any other value (or one whose layout
// is not the expected one). f reads the memory the container points to.
func (r *Reader) Container(v Value, f Frame) (*Container, bool) {
	t := v.Type.Strip()
	if t == nil || !t.IsComposite() || v.Bytes == nil || f == nil || int64(len(v.Bytes)) < t.ByteSize() {
		return nil, false
	}
	cr := &containerReader{r: r, f: f, v: v, t: t}
	name := t.Name
	switch {
	case strings.HasPrefix(name, "map<"), strings.HasPrefix(name, "multimap<"):
		return cr.rbTree(strings.TrimSuffix(templateBase(name), "<"), true)
	case strings.HasPrefix(name, "set<"), strings.HasPrefix(name, "multiset<"):
		return cr.rbTree(strings.TrimSuffix(templateBase(name), "<"), false)
	case strings.HasPrefix(name, "unordered_map<"), strings.HasPrefix(name, "unordered_multimap<"):
		return cr.hashtable(strings.TrimSuffix(templateBase(name), "<"), true)
	case strings.HasPrefix(name, "unordered_set<"), strings.HasPrefix(name, "unordered_multiset<"):
		return cr.hashtable(strings.TrimSuffix(templateBase(name), "<"), false)
	case strings.HasPrefix(name, "list<"):
		return cr.list()
	case strings.HasPrefix(name, "forward_list<"):
		return cr.forwardList()
	case strings.HasPrefix(name, "stack<"), strings.HasPrefix(name, "queue<"), strings.HasPrefix(name, "priority_queue<"):
		return cr.adapter(strings.TrimSuffix(templateBase(name), "<"))
	case strings.HasPrefix(name, "deque<"):
		return cr.deque()
	case strings.HasPrefix(name, "vector<bool,"):
		return cr.vectorBool()
	case strings.HasPrefix(name, "vector<") && !strings.HasPrefix(name, "vector<bool,"):
		return cr.vector()
	case strings.HasPrefix(name, "unique_ptr<"):
		return cr.uniquePtr()
	case strings.HasPrefix(name, "shared_ptr<"), strings.HasPrefix(name, "weak_ptr<"):
		return cr.sharedPtr(strings.TrimSuffix(templateBase(name), "<"))
	case strings.HasPrefix(name, "optional<"):
		return cr.optional()
	case strings.HasPrefix(name, "basic_string<char,"):
		return cr.stdString()
	case strings.HasPrefix(name, "pair<"):
		return cr.pair()
	case strings.HasPrefix(name, "basic_string_view<"):
		return cr.stringView()
	case strings.HasPrefix(name, "array<"):
		return cr.stdArray()
	case strings.HasPrefix(name, "tuple<"):
		return cr.tuple()
	case strings.HasPrefix(name, "variant<"):
		return cr.variant()
	case strings.HasPrefix(name, "bitset<"):
		return cr.bitset()
	case strings.HasPrefix(name, "_Rb_tree_iterator<"), strings.HasPrefix(name, "_Rb_tree_const_iterator<"),
		strings.HasPrefix(name, "_List_iterator<"), strings.HasPrefix(name, "_List_const_iterator<"):
		return cr.nodeIterator(strings.HasPrefix(name, "_Rb"))
	case strings.HasPrefix(name, "__normal_iterator<"):
		return cr.normalIterator()
	case strings.HasPrefix(name, "_Node_iterator<"), strings.HasPrefix(name, "_Node_const_iterator<"):
		return cr.hashIterator()
	}
	return cr.rust()
}

// templateBase is a template's name up to and including its "<".
func templateBase(name string) string {
	if i := strings.IndexByte(name, '<'); i >= 0 {
		return name[:i+1]
	}
	return name
}

type containerReader struct {
	r *Reader
	f Frame
	v Value
	t *Type
}

// member finds a data member by name in t, its base classes and (in path
// order) nothing else: the offset from t's start and its type.
func member(t *Type, name string) (int64, *Type, bool) {
	return memberDepth(t, name, 0)
}

func memberDepth(t *Type, name string, depth int) (int64, *Type, bool) {
	t = t.Strip()
	if t == nil || depth > 12 {
		return 0, nil, false
	}
	for _, f := range t.Fields {
		if f.Name == name && !f.Base && f.BitSize == 0 && f.OffsetExpr == nil && f.Type != nil {
			return f.Offset, f.Type, true
		}
	}
	for _, f := range t.Fields {
		if f.Base && f.OffsetExpr == nil {
			if o, mt, ok := memberDepth(f.Type, name, depth+1); ok {
				return f.Offset + o, mt, true
			}
		}
	}
	return 0, nil, false
}

// path follows members by name (each through base classes).
func path(t *Type, names ...string) (int64, *Type, bool) {
	var off int64
	for _, n := range names {
		o, mt, ok := member(t, n)
		if !ok {
			return 0, nil, false
		}
		off, t = off+o, mt
	}
	return off, t, true
}

// templateParam returns a type parameter of t by name (or, name "", the
// first).
func templateParam(t *Type, name string) *Type {
	for _, p := range t.TemplateParams {
		if !p.HasValue && p.Type != nil && (name == "" || p.Name == name) {
			return p.Type
		}
	}
	return nil
}

// word reads the 8-byte word at off in the value's bytes.
func (c *containerReader) word(off int64) (uint64, bool) {
	if off < 0 || off+8 > int64(len(c.v.Bytes)) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(c.v.Bytes[off:]), true
}

// fieldAddr is the run-time address of the value's member at off (0 for a
// value not in memory).
func (c *containerReader) fieldAddr(off int64) uint64 {
	if c.v.Place != PlaceMemory {
		return 0
	}
	return c.v.Address + uint64(off)
}

// load reads a value of type t at addr.
func (c *containerReader) load(t *Type, addr uint64) (Value, error) {
	size := t.ByteSize()
	if size < 0 || size > MaxValueSize {
		return Value{}, ErrBadContainer
	}
	buf := make([]byte, size)
	if n, _ := c.f.ReadMemory(buf, addr); n < len(buf) {
		return Value{}, &MemoryError{Addr: addr + uint64(n)}
	}
	return Value{Type: t, Place: PlaceMemory, Address: addr, Bytes: buf}, nil
}

// ptrAt reads a pointer in target memory.
func (c *containerReader) ptrAt(addr uint64) (uint64, error) {
	var b [8]byte
	if n, _ := c.f.ReadMemory(b[:], addr); n < 8 {
		return 0, &MemoryError{Addr: addr + uint64(n)}
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// alignOf estimates a type's alignment from its members (DWARF records an
// alignment only when the source asked for one).
func alignOf(t *Type, depth int) int64 {
	s := t.Strip()
	if s == nil || depth > 16 {
		return 1
	}
	switch s.Kind {
	case KindArray:
		return alignOf(s.Elem, depth+1)
	case KindStruct, KindClass, KindUnion:
		a := int64(1)
		for _, f := range s.Fields {
			if f.Type != nil {
				a = max(a, alignOf(f.Type, depth+1))
			}
		}
		return a
	}
	size := s.ByteSize()
	if size <= 0 {
		return 1
	}
	return min(size, 16)
}

// nodeValueOffset is where a node's value is: right after the node's
// link part (base), aligned for the value (libstdc++'s list, tree and hash
// nodes all put their __aligned_membuf there). The node type itself is not
// looked up by name: that would build the reader's whole name index the
// first time a container is shown.
func (c *containerReader) nodeValueOffset(base, val *Type) (int64, bool) {
	bs := base.ByteSize()
	if bs <= 0 {
		return 0, false
	}
	a := alignOf(val, 0)
	return (bs + a - 1) / a * a, true
}

// child names element i (a map's element, a pair, is split into key and
// value).
func (c *containerReader) child(i int, v Value, style ChildStyle) Child {
	if style == ChildMap {
		ko, kt, ok1 := member(v.Type, "first")
		vo, vt, ok2 := member(v.Type, "second")
		if !ok1 || !ok2 {
			// A Rust tuple (K, V).
			ko, kt, ok1 = member(v.Type, "__0")
			vo, vt, ok2 = member(v.Type, "__1")
		}
		if ok1 && ok2 {
			return c.pairChild(v, ko, kt, vo, vt)
		}
	}
	return Child{Name: elemName(i), Value: v}
}

// pairChild splits a map element into its key and value.
func (c *containerReader) pairChild(v Value, ko int64, kt *Type, vo int64, vt *Type) Child {
	k, ok1 := subValue(v, ko, kt)
	val, ok2 := subValue(v, vo, vt)
	if !ok1 || !ok2 {
		return Child{Name: "?", Value: v}
	}
	return Child{Key: &k, Value: val}
}

// subValue is the part of v at off of type t.
func subValue(v Value, off int64, t *Type) (Value, bool) {
	size := t.ByteSize()
	if off < 0 || size < 0 || off+size > int64(len(v.Bytes)) {
		return Value{}, false
	}
	sv := Value{Type: t, Bytes: v.Bytes[off : off+size], Place: v.Place}
	if v.Place == PlaceMemory {
		sv.Address = v.Address + uint64(off)
	}
	return sv, true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// rbTree: std::map, std::set and their multi variants. _M_t (an _Rb_tree)
// holds _M_impl, whose _Rb_tree_header base holds _M_header (the sentinel:
// _M_left is the leftmost node) and _M_node_count; the walk is an in-order
// successor walk, nodes' values after their _Rb_tree_node_base.
func (c *containerReader) rbTree(kind string, isMap bool) (*Container, bool) {
	tree, _, ok := path(c.t, "_M_t")
	tt, _ := memberType(c.t, "_M_t")
	if !ok || tt == nil {
		return nil, false
	}
	hdr, ht, ok1 := path(tt, "_M_impl", "_M_header")
	cnt, _, ok2 := path(tt, "_M_impl", "_M_node_count")
	val := templateParam(tt, "_Val")
	if !ok1 || !ok2 || val == nil || val.ByteSize() <= 0 {
		return nil, false
	}
	leftO, _, ok1 := member(ht, "_M_left")
	rightO, _, ok2 := member(ht, "_M_right")
	parentO, _, ok3 := member(ht, "_M_parent")
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	n64, ok := c.word(tree + cnt)
	if !ok {
		return nil, false
	}
	c0 := &Container{Kind: "std::" + kind, GDB: true, Indexed: true, Style: ChildNamed}
	if !c0.setCount(n64, withElements("std::"+kind)) {
		return c0, true
	}
	if isMap {
		c0.Style = ChildMap
	}
	valOff, ok := c.nodeValueOffset(ht, val)
	if !ok {
		return nil, false
	}
	header := c.fieldAddr(tree + hdr)
	first := func() (uint64, error) {
		if header == 0 {
			return 0, ErrBadContainer
		}
		return c.ptrAt(header + uint64(leftO))
	}
	next := func(node uint64) (uint64, error) {
		// The successor: the leftmost of the right subtree, else the first
		// ancestor this node is in the left subtree of.
		right, err := c.ptrAt(node + uint64(rightO))
		if err != nil {
			return 0, err
		}
		if right != 0 {
			for i := 0; i < 64; i++ {
				l, err := c.ptrAt(right + uint64(leftO))
				if err != nil {
					return 0, err
				}
				if l == 0 {
					return right, nil
				}
				right = l
			}
			return 0, ErrBadContainer
		}
		for i := 0; i < 64; i++ {
			p, err := c.ptrAt(node + uint64(parentO))
			if err != nil {
				return 0, err
			}
			pr, err := c.ptrAt(p + uint64(rightO))
			if err != nil {
				return 0, err
			}
			if pr != node {
				return p, nil
			}
			node = p
		}
		return 0, ErrBadContainer
	}
	c0.children = c.walk(val, c0.Style, first, next, func(node uint64) uint64 { return node + uint64(valOff) })
	return c0, true
}

// memberType is the type of t's direct member name.
func memberType(t *Type, name string) (*Type, bool) {
	_, mt, ok := member(t, name)
	if !ok {
		return nil, false
	}
	return mt.Strip(), mt.Strip() != nil
}

// hashtable: std::unordered_map and friends. _M_h (a _Hashtable) holds
// _M_before_begin (whose _M_nxt is the first node; nodes form one singly
// linked list) and _M_element_count; a node's value follows its
// _Hash_node_base.
func (c *containerReader) hashtable(kind string, isMap bool) (*Container, bool) {
	h, ht, ok := path(c.t, "_M_h")
	if !ok {
		return nil, false
	}
	bb, bt, ok1 := member(ht, "_M_before_begin")
	cnt, _, ok2 := member(ht, "_M_element_count")
	val := templateParam(ht.Strip(), "_Value")
	if !ok1 || !ok2 || val == nil || val.ByteSize() <= 0 {
		return nil, false
	}
	nxt, _, ok := member(bt, "_M_nxt")
	if !ok {
		return nil, false
	}
	n64, ok := c.word(h + cnt)
	if !ok {
		return nil, false
	}
	c0 := &Container{Kind: "std::" + kind, GDB: true, Indexed: true, Style: ChildNamed}
	if isMap {
		c0.Style = ChildMap
	}
	if !c0.setCount(n64, withElements("std::"+kind)) {
		return c0, true
	}
	valOff, ok := c.nodeValueOffset(bt, val)
	if !ok {
		return nil, false
	}
	first, ok := c.word(h + bb + nxt)
	if !ok {
		return nil, false
	}
	c0.children = c.walk(val, c0.Style, func() (uint64, error) { return first, nil },
		func(node uint64) (uint64, error) { return c.ptrAt(node + uint64(nxt)) },
		func(node uint64) uint64 { return node + uint64(valOff) })
	return c0, true
}

// list: std::list (std::__cxx11::list). _M_impl._M_node is the sentinel
// (_List_node_header: _M_next, _M_prev, _M_size); nodes' values follow
// their _List_node_base.
func (c *containerReader) list() (*Container, bool) {
	hdr, ht, ok := path(c.t, "_M_impl", "_M_node")
	val := templateParam(c.t, "_Tp")
	if !ok || val == nil || val.ByteSize() <= 0 {
		return nil, false
	}
	nextO, _, ok1 := member(ht, "_M_next")
	sizeO, _, ok2 := member(ht, "_M_size")
	var base *Type
	for _, f := range ht.Strip().Fields {
		if f.Base {
			base = f.Type
		}
	}
	if !ok1 || base == nil {
		return nil, false
	}
	// gdb names it by its namespace: the C++11 ABI's list (std::__cxx11)
	// is the one whose header counts its nodes (_M_size). Not looked up:
	// a qualified name costs the reader's whole name index.
	name := "std::list"
	if ok2 {
		name = "std::__cxx11::list"
	}
	c0 := &Container{Kind: "std::list", GDB: true, Indexed: true, Style: ChildNamed}
	header := c.fieldAddr(hdr)
	first, ok := c.word(hdr + nextO)
	if !ok {
		return nil, false
	}
	if first == header {
		c0.Summary = "empty " + name
		return c0, true
	}
	c0.Summary = name
	// The count: _M_size, checked against the links (gdb walks them).
	n := -1
	if ok2 {
		if s, ok := c.word(hdr + sizeO); ok && s <= MaxContainerElements {
			n = int(s)
		}
	}
	if n < 0 {
		n = c.countLinks(first, header, nextO)
	}
	c0.Count = n
	valOff, ok := c.nodeValueOffset(base, val)
	if !ok {
		return nil, false
	}
	c0.children = c.walk(val, ChildNamed, func() (uint64, error) { return first, nil },
		func(node uint64) (uint64, error) {
			p, err := c.ptrAt(node + uint64(nextO))
			if err == nil && p == header {
				return 0, ErrBadContainer
			}
			return p, err
		},
		func(node uint64) uint64 { return node + uint64(valOff) })
	return c0, true
}

// forwardList: std::forward_list: _M_impl._M_head._M_next starts a
// singly linked list of nodes, each value after its _Fwd_list_node_base.
func (c *containerReader) forwardList() (*Container, bool) {
	ho, ht, ok := path(c.t, "_M_impl", "_M_head")
	val := templateParam(c.t, "_Tp")
	if !ok || val == nil || val.ByteSize() <= 0 {
		return nil, false
	}
	no, _, ok := member(ht, "_M_next")
	if !ok {
		return nil, false
	}
	first, ok := c.word(ho + no)
	if !ok {
		return nil, false
	}
	c0 := &Container{Kind: "std::forward_list", GDB: true, Indexed: true, Style: ChildNamed, Summary: "std::forward_list"}
	if first == 0 {
		c0.Summary = "empty std::forward_list"
		return c0, true
	}
	valOff, ok := c.nodeValueOffset(ht, val)
	if !ok {
		return nil, false
	}
	// No count is kept: the links are counted (bounded, cycles ended).
	c0.Count = c.countLinks(first, 0, no)
	c0.children = c.walk(val, ChildNamed, func() (uint64, error) { return first, nil },
		func(node uint64) (uint64, error) { return c.ptrAt(node + uint64(no)) },
		func(node uint64) uint64 { return node + uint64(valOff) })
	return c0, true
}

// adapter: std::stack, std::queue, std::priority_queue: the container c
// they wrap, shown as gdb does ("std::stack wrapping: std::deque with 3
// elements").
func (c *containerReader) adapter(kind string) (*Container, bool) {
	o, ct, ok := member(c.t, "c")
	if !ok || c.r == nil {
		return nil, false
	}
	inner, ok := subValue(c.v, o, ct)
	if !ok {
		return nil, false
	}
	in, ok := c.r.Container(inner, c.f)
	if !ok || in.Target != nil {
		return nil, false
	}
	out := *in
	out.Kind = "std::" + kind
	out.Summary = "std::" + kind + " wrapping: " + in.Summary
	return &out, true
}

// deque: std::deque. _M_impl holds the _M_start and _M_finish iterators
// (_M_cur, _M_first, _M_last, _M_node: the buffer's slot in the map); the
// elements run from start's _M_cur to its buffer's end, through whole
// buffers, to finish's _M_cur.
func (c *containerReader) deque() (*Container, bool) {
	so, st, ok1 := path(c.t, "_M_impl", "_M_start")
	fo, _, ok2 := path(c.t, "_M_impl", "_M_finish")
	val := templateParam(c.t, "_Tp")
	if !ok1 || !ok2 || val == nil || val.ByteSize() <= 0 {
		return nil, false
	}
	var it [4]int64
	for i, n := range []string{"_M_cur", "_M_first", "_M_last", "_M_node"} {
		o, _, ok := member(st, n)
		if !ok {
			return nil, false
		}
		it[i] = o
	}
	var s, f [4]uint64
	for i := range it {
		var ok1, ok2 bool
		s[i], ok1 = c.word(so + it[i])
		f[i], ok2 = c.word(fo + it[i])
		if !ok1 || !ok2 {
			return nil, false
		}
	}
	esize := uint64(val.ByteSize())
	c0 := &Container{Kind: "std::deque", GDB: true, Indexed: true, Style: ChildArray}
	bufElems := (s[2] - s[1]) / esize
	if s[2] < s[1] || bufElems == 0 || f[3] < s[3] || (f[3]-s[3])%8 != 0 || s[0] < s[1] || s[0] > s[2] || f[0] < f[1] || f[0] > f[2] {
		c0.Summary = "std::deque <invalid>"
		return c0, true
	}
	nodes := (f[3] - s[3]) / 8
	var total uint64
	if nodes == 0 {
		total = (f[0] - s[0]) / esize
	} else {
		total = (s[2]-s[0])/esize + (nodes-1)*bufElems + (f[0]-f[1])/esize
	}
	if total > 1<<31 {
		c0.Summary = "std::deque <invalid>"
		return c0, true
	}
	n := int(total)
	c0.Count = n
	c0.Summary = "std::deque with " + strconv.Itoa(n) + plural(n, " element", " elements")
	// Element i: its buffer is (start offset + i) / bufElems slots past
	// the start's.
	startIdx := (s[0] - s[1]) / esize
	c0.children = indexed(func(i int) (Value, error) {
		k := startIdx + uint64(i)
		buf, err := c.ptrAt(s[3] + 8*(k/bufElems))
		if err != nil {
			return Value{}, err
		}
		return c.load(val, buf+(k%bufElems)*esize)
	})
	return c0, true
}

// vector: std::vector (not vector<bool>). _M_impl holds _M_start, _M_finish
// and _M_end_of_storage.
func (c *containerReader) vector() (*Container, bool) {
	so, pt, ok1 := path(c.t, "_M_impl", "_M_start")
	fo, _, ok2 := path(c.t, "_M_impl", "_M_finish")
	eo, _, ok3 := path(c.t, "_M_impl", "_M_end_of_storage")
	p := pt.Strip()
	if !ok1 || !ok2 || !ok3 || p == nil || p.Kind != KindPointer || p.Elem.ByteSize() <= 0 {
		return nil, false
	}
	elem := p.Elem
	s, _ := c.word(so)
	f, _ := c.word(fo)
	e, _ := c.word(eo)
	esize := uint64(elem.ByteSize())
	c0 := &Container{Kind: "std::vector", GDB: true, Indexed: true, Style: ChildArray}
	if f < s || e < f || (f-s)%esize != 0 || (f-s)/esize > 1<<31 || (e-s)/esize > 1<<31 {
		c0.Summary = "std::vector <invalid>"
		return c0, true
	}
	n := int((f - s) / esize)
	c0.Count = n
	c0.Summary = "std::vector of length " + strconv.Itoa(n) + ", capacity " + strconv.FormatUint((e-s)/esize, 10)
	c0.children = c.contiguous(s, elem)
	return c0, true
}

// contiguous lists elements stored one after another from addr.
func (c *containerReader) contiguous(addr uint64, elem *Type) func(start, n int) ([]Child, error) {
	esize := uint64(elem.ByteSize())
	return indexed(func(i int) (Value, error) { return c.load(elem, addr+uint64(i)*esize) })
}

// stdArray: std::array (gdb has no printer; shown as its elements).
func (c *containerReader) stdArray() (*Container, bool) {
	o, at, ok := member(c.t, "_M_elems")
	a := at.Strip()
	if !ok || a == nil || a.Kind != KindArray || a.Count < 0 || a.Elem.ByteSize() <= 0 {
		return nil, false
	}
	n := int(min(a.Count, MaxContainerElements))
	c0 := &Container{Kind: "std::array", Count: n, Indexed: true, Style: ChildArray,
		Summary: "std::array of length " + strconv.Itoa(n)}
	if addr := c.fieldAddr(o); addr != 0 {
		c0.children = c.contiguous(addr, a.Elem)
	} else {
		return nil, false
	}
	return c0, true
}

// templateArgName is how gdb's printers name a template argument.
func (c *containerReader) templateArgName(t *Type) string {
	if t == nil || c.r == nil {
		return "?"
	}
	s := t.Strip()
	name := t.String()
	if s != nil && s.IsComposite() {
		name = c.r.QualifiedName(s)
	}
	name = strings.ReplaceAll(name, "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string")
	return dropDefaultArgs(strings.ReplaceAll(name, "__cxx11::", ""))
}

// dropDefaultArgs removes the template arguments gdb's type printers leave
// out as defaults (std::vector<int, std::allocator<int> > is
// std::vector<int>): allocators, comparators, hashers.
func dropDefaultArgs(name string) string {
	for _, d := range []string{", std::allocator<", ", std::less<", ", std::hash<", ", std::equal_to<", ", std::default_delete<"} {
		for n := 0; n < 16; n++ {
			i := strings.Index(name, d)
			if i < 0 {
				break
			}
			depth, j := 0, i+len(d)-1
			for ; j < len(name); j++ {
				if name[j] == '<' {
					depth++
				} else if name[j] == '>' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if j >= len(name) {
				break
			}
			end := j + 1
			if strings.HasPrefix(name[end:], " >") {
				end++ // C++03 spelling's space before the closing ">"
			}
			name = name[:i] + name[end:]
		}
	}
	return name
}

// pointerMember finds the first pointer member named name under t (through
// members named in via, and base classes).
func pointerMember(t *Type, name string, via []string, depth int) (int64, *Type, bool) {
	s := t.Strip()
	if s == nil || depth > 12 {
		return 0, nil, false
	}
	for _, f := range s.Fields {
		if f.OffsetExpr != nil || f.BitSize != 0 || f.Type == nil {
			continue
		}
		ft := f.Type.Strip()
		if f.Name == name && ft != nil && ft.Kind == KindPointer {
			return f.Offset, f.Type, true
		}
	}
	for _, f := range s.Fields {
		if f.OffsetExpr != nil || f.BitSize != 0 || f.Type == nil {
			continue
		}
		walk := f.Base
		for _, v := range via {
			walk = walk || f.Name == v
		}
		if walk {
			if o, pt, ok := pointerMember(f.Type, name, via, depth+1); ok {
				return f.Offset + o, pt, true
			}
		}
	}
	return 0, nil, false
}

// uniquePtr: std::unique_ptr. The pointer is the _M_head_impl of the tuple
// in _M_t (in __uniq_ptr_impl, itself _M_t in newer versions).
func (c *containerReader) uniquePtr() (*Container, bool) {
	o, pt, ok := pointerMember(c.t, "_M_head_impl", []string{"_M_t"}, 0)
	if !ok {
		return nil, false
	}
	arg := c.templateArgName(templateParam(c.t, "_Tp"))
	pv, ok := subValue(c.v, o, pt)
	if !ok {
		return nil, false
	}
	return &Container{Kind: "std::unique_ptr", GDB: true, Count: 1, Style: ChildNamed,
		Summary: "std::unique_ptr<" + arg + ">",
		children: func(int, int) ([]Child, error) {
			return []Child{{Name: "get()", Value: pv}}, nil
		}}, true
}

// sharedPtr: std::shared_ptr and std::weak_ptr: _M_ptr, and the control
// block _M_refcount._M_pi with _M_use_count and _M_weak_count.
func (c *containerReader) sharedPtr(kind string) (*Container, bool) {
	po, pt, ok1 := member(c.t, "_M_ptr")
	rc, rt, ok2 := member(c.t, "_M_refcount")
	if !ok1 || !ok2 {
		return nil, false
	}
	pio, pit, ok := member(rt, "_M_pi")
	pis := pit.Strip()
	if !ok || pis == nil || pis.Kind != KindPointer {
		return nil, false
	}
	uo, _, ok1 := member(pis.Elem, "_M_use_count")
	wo, _, ok2 := member(pis.Elem, "_M_weak_count")
	pv, ok3 := subValue(c.v, po, pt)
	pi, ok4 := c.word(rc + pio)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, false
	}
	state := "empty"
	if pi != 0 {
		var b [4]byte
		use, weak := "?", "?"
		if n, _ := c.f.ReadMemory(b[:], pi+uint64(uo)); n == 4 {
			u := int32(binary.LittleEndian.Uint32(b[:]))
			if n, _ := c.f.ReadMemory(b[:], pi+uint64(wo)); n == 4 {
				w := int32(binary.LittleEndian.Uint32(b[:]))
				if u == 0 {
					state = "expired, weak count " + strconv.Itoa(int(w))
				} else {
					use, weak = strconv.Itoa(int(u)), strconv.Itoa(int(w)-1)
				}
			}
		}
		if !strings.HasPrefix(state, "expired") {
			state = "use count " + use + ", weak count " + weak
		}
	}
	arg := c.templateArgName(templateParam(c.t, "_Tp"))
	return &Container{Kind: "std::" + kind, GDB: true, Count: 1, Style: ChildNamed,
		Summary: "std::" + kind + "<" + arg + "> (" + state + ")",
		children: func(int, int) ([]Child, error) {
			return []Child{{Name: "get()", Value: pv}}, nil
		}}, true
}

// optional: std::optional: _M_payload's _M_engaged, and its _M_payload's
// _M_value.
func (c *containerReader) optional() (*Container, bool) {
	eo, _, ok1 := path(c.t, "_M_payload", "_M_engaged")
	vo, vt, ok2 := path(c.t, "_M_payload", "_M_payload", "_M_value")
	if !ok1 || !ok2 || eo >= int64(len(c.v.Bytes)) {
		return nil, false
	}
	arg := c.templateArgName(templateParam(c.t, "_Tp"))
	c0 := &Container{Kind: "std::optional", GDB: true, Style: ChildNamed, Summary: "std::optional<" + arg + ">"}
	if c.v.Bytes[eo] == 0 {
		c0.Summary += " [no contained value]"
		return c0, true
	}
	v, ok := subValue(c.v, vo, vt)
	if !ok {
		return nil, false
	}
	c0.Count = 1
	c0.children = func(int, int) ([]Child, error) { return []Child{{Name: "[contained value]", Value: v}}, nil }
	return c0, true
}

// stringView: std::string_view (_M_len, _M_str), printed as its text.
func (c *containerReader) stringView() (*Container, bool) {
	lo, _, ok1 := member(c.t, "_M_len")
	so, st, ok2 := member(c.t, "_M_str")
	if !ok1 || !ok2 || st.Strip() == nil || st.Strip().Kind != KindPointer || st.Strip().Elem.ByteSize() != 1 {
		return nil, false
	}
	n, ok1 := c.word(lo)
	p, ok2 := c.word(so)
	if !ok1 || !ok2 {
		return nil, false
	}
	text, ok := c.text(p, n)
	if !ok {
		return nil, false
	}
	return &Container{Kind: "std::string_view", GDB: true, Summary: text}, true
}

// stdString: std::string (_M_dataplus._M_p, _M_string_length), printed as
// its text.
func (c *containerReader) stdString() (*Container, bool) {
	po, pt, ok1 := path(c.t, "_M_dataplus", "_M_p")
	lo, _, ok2 := member(c.t, "_M_string_length")
	if !ok1 || !ok2 || pt.Strip() == nil || pt.Strip().Kind != KindPointer {
		return nil, false
	}
	p, ok1 := c.word(po)
	n, ok2 := c.word(lo)
	if !ok1 || !ok2 {
		return nil, false
	}
	text, _ := c.text(p, n)
	return &Container{Kind: "std::string", GDB: true, Summary: text}, true
}

// pair: std::pair, its members first and second without its empty
// __pair_base (as gdb prints it).
func (c *containerReader) pair() (*Container, bool) {
	fo, ft, ok1 := member(c.t, "first")
	so, st, ok2 := member(c.t, "second")
	if !ok1 || !ok2 {
		return nil, false
	}
	f, ok1 := subValue(c.v, fo, ft)
	s, ok2 := subValue(c.v, so, st)
	if !ok1 || !ok2 {
		return nil, false
	}
	kids := []Child{{Name: "first", Value: f}, {Name: "second", Value: s}}
	return &Container{Kind: "std::pair", GDB: true, Count: 2, Style: ChildNamed,
		children: listed(kids)}, true
}

// text reads n bytes at p and quotes them as gdb prints a string (200
// characters at most, then "...").
func (c *containerReader) text(p, n uint64) (string, bool) {
	read := min(n, 200)
	buf := make([]byte, read)
	if got, _ := c.f.ReadMemory(buf, p); uint64(got) < read {
		return "<error: Cannot access memory at address 0x" + strconv.FormatUint(p, 16) + ">", true
	}
	pr := &printer{r: c.r, f: c.f, o: FormatOptions{Elements: 200, Repeats: 10}}
	pr.printStr(buf, n > read)
	return pr.b.String(), true
}

// tuple: std::tuple. Its _Tuple_impl<i, ...> bases nest: each has the next
// _Tuple_impl as its first base (if any) and a _Head_base holding element
// i's _M_head_impl.
func (c *containerReader) tuple() (*Container, bool) {
	var elems []Child
	cur, at := c.t, int64(0)
	for depth := 0; depth < 64; depth++ {
		var impl, head *Field
		for i := range cur.Fields {
			f := &cur.Fields[i]
			if !f.Base || f.OffsetExpr != nil || f.Type.Strip() == nil {
				continue
			}
			switch n := f.Type.Strip().Name; {
			case strings.HasPrefix(n, "_Tuple_impl<"):
				impl = f
			case strings.HasPrefix(n, "_Head_base<"):
				head = f
			}
		}
		if head != nil {
			ho, ht, ok := member(head.Type, "_M_head_impl")
			if !ok {
				return nil, false // an empty element (EBO): not handled
			}
			v, ok := subValue(c.v, at+head.Offset+ho, ht)
			if !ok {
				return nil, false
			}
			elems = append(elems, Child{Name: elemName(len(elems) + 1), Value: v})
		}
		if impl == nil {
			break
		}
		cur, at = impl.Type.Strip(), at+impl.Offset
	}
	c0 := &Container{Kind: "std::tuple", GDB: true, Style: ChildNamed, Count: len(elems)}
	if len(elems) == 0 {
		c0.Summary = "empty std::tuple"
		return c0, true
	}
	c0.Summary = "std::tuple containing"
	c0.children = listed(elems)
	return c0, true
}

// nodeIterator: a std::map/set (tree) or std::list iterator: _M_node, the
// element after the node's link part.
func (c *containerReader) nodeIterator(tree bool) (*Container, bool) {
	o, pt, ok := member(c.t, "_M_node")
	p := pt.Strip()
	val := templateParam(c.t, "_Tp")
	if !ok || p == nil || p.Kind != KindPointer || val == nil || val.ByteSize() <= 0 {
		return nil, false
	}
	what := "std::list"
	if tree {
		what = "associative container"
	}
	node, ok := c.word(o)
	if !ok {
		return nil, false
	}
	base := p.Elem
	if s := base.Strip(); s != nil && s.Declaration && c.r != nil {
		// Defined in libstdc++ itself (_List_node_base): found by name.
		base = c.r.Complete(s)
	}
	off, ok := c.nodeValueOffset(base, val)
	if !ok {
		return nil, false
	}
	return c.iterator(node, node+uint64(off), val, what)
}

// iterator points at the element at addr (none when node is 0).
func (c *containerReader) iterator(node, addr uint64, val *Type, what string) (*Container, bool) {
	c0 := &Container{Kind: "iterator", GDB: true}
	if node == 0 {
		c0.Summary = "non-dereferenceable iterator for " + what
		return c0, true
	}
	v, err := c.load(val, addr)
	if err != nil {
		c0.Summary = "<error: " + ErrorMessage(err) + ">"
		return c0, true
	}
	c0.Target = &v
	c0.Count = 1
	c0.children = func(int, int) ([]Child, error) { return []Child{{Name: "*", Value: v}}, nil }
	return c0, true
}

// normalIterator: a std::vector's (or string's) iterator: _M_current.
func (c *containerReader) normalIterator() (*Container, bool) {
	o, pt, ok := member(c.t, "_M_current")
	p := pt.Strip()
	if !ok || p == nil || p.Kind != KindPointer || p.Elem.ByteSize() <= 0 {
		return nil, false
	}
	cur, ok := c.word(o)
	if !ok {
		return nil, false
	}
	return c.iterator(cur, cur, p.Elem, "std::vector")
}

// hashIterator: an unordered container's iterator: _M_cur, a node whose
// _M_storage holds the element.
func (c *containerReader) hashIterator() (*Container, bool) {
	o, pt, ok := member(c.t, "_M_cur")
	p := pt.Strip()
	val := templateParam(c.t, "_Value")
	if !ok || p == nil || p.Kind != KindPointer || val == nil || val.ByteSize() <= 0 {
		return nil, false
	}
	so, _, ok := member(p.Elem, "_M_storage")
	if !ok {
		return nil, false
	}
	cur, ok := c.word(o)
	if !ok {
		return nil, false
	}
	c0, ok := c.iterator(cur, cur+uint64(so), val, "unordered container")
	if ok {
		c0.GDB = false // gdb 13's printers leave it alone
	}
	return c0, ok
}

// container prints a container as gdb prints it with its pretty-printers:
// the summary, then " = {" children "}" (none when it has none).
func (p *printer) container(c *Container, depth int) {
	if t := c.Target; t != nil {
		p.value(t.Type, t.Bytes, nil, 0, t.Address, true, depth+1)
		return
	}
	p.b.WriteString(c.Summary)
	if c.Count == 0 {
		return
	}
	kids, err := c.Children(0, p.o.Elements)
	if c.Summary != "" {
		p.b.WriteString(" = ")
	}
	p.b.WriteString("{")
	for i, k := range kids {
		if i > 0 {
			p.b.WriteString(", ")
		}
		switch {
		case k.Key != nil:
			p.b.WriteByte('[')
			p.value(k.Key.Type, k.Key.Bytes, nil, 0, k.Key.Address, k.Key.Place == PlaceMemory, depth+1)
			p.b.WriteString("] = ")
		case c.Style == ChildNamed:
			p.b.WriteString(k.Name + " = ")
		}
		p.value(k.Value.Type, k.Value.Bytes, nil, 0, k.Value.Address, k.Value.Place == PlaceMemory, depth+1)
		if p.full() {
			break
		}
	}
	switch {
	case err != nil:
		if len(kids) > 0 {
			p.b.WriteString(", ")
		}
		p.b.WriteString("<error: " + ErrorMessage(err) + ">")
	case len(kids) < c.Count:
		p.b.WriteString("...")
	}
	p.b.WriteByte('}')
}
