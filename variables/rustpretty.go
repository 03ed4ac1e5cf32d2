package variables

import (
	"strconv"
	"strings"
)

// Rust's library types, as rust-gdb's printers (rustc's gdb_providers.py)
// show them: HashMap(size=N) = {[k] = v, ...} from hashbrown's table,
// HashSet, Rc/Arc with their counts, VecDeque, slices; String as its text.

// rust recognises Rust's library types by their DWARF names.
func (c *containerReader) rust() (*Container, bool) {
	name := c.t.Name
	switch {
	case strings.HasPrefix(name, "HashMap<"):
		return c.rustHash("HashMap", "base", "table")
	case strings.HasPrefix(name, "HashSet<"):
		return c.rustHash("HashSet", "base", "map", "table")
	case strings.HasPrefix(name, "Rc<"):
		return c.rustRc("Rc", "value")
	case strings.HasPrefix(name, "Arc<"):
		return c.rustRc("Arc", "data")
	case strings.HasPrefix(name, "VecDeque<"):
		return c.rustVecDeque()
	case strings.HasPrefix(name, "Vec<"):
		return c.rustVec()
	case strings.HasPrefix(name, "BTreeMap<"):
		return c.rustBTree(false)
	case strings.HasPrefix(name, "BTreeSet<"):
		return c.rustBTree(true)
	case strings.HasPrefix(name, "&[") || strings.HasPrefix(name, "&mut ["):
		return c.rustSlice()
	case name == "String" || name == "alloc::string::String":
		return c.rustString()
	}
	return nil, false
}

// rustPointer descends from t through the members Rust's pointer wrappers
// use (buf, inner, ptr, pointer: RawVec, Unique, NonNull) to the raw
// pointer: its offset in t and its type.
func rustPointer(t *Type) (int64, *Type, bool) {
	var off int64
	cur := t.Strip()
	for depth := 0; depth < 8 && cur != nil; depth++ {
		if cur.Kind == KindPointer {
			return off, cur, true
		}
		found := false
		for _, name := range []string{"buf", "inner", "ptr", "pointer"} {
			if o, mt, ok := member(cur, name); ok {
				off, cur, found = off+o, mt.Strip(), true
				break
			}
		}
		if !found {
			return 0, nil, false
		}
	}
	return 0, nil, false
}

// rustWord finds the machine word inside a wrapper (Cell<usize>,
// AtomicUsize, UsizeNoHighBit): the first 8-byte integer down its first
// members.
func rustWord(t *Type) (int64, bool) {
	off, _, ok := rustWordType(t)
	return off, ok
}

// rustWordType is rustWord with the word's own type (usize's DIE).
func rustWordType(t *Type) (int64, *Type, bool) {
	var off int64
	cur := t
	for depth := 0; depth < 8 && cur.Strip() != nil; depth++ {
		s := cur.Strip()
		if s.Kind == KindBase && s.ByteSize() == 8 {
			return off, cur, true
		}
		if !s.IsComposite() || len(s.Fields) == 0 {
			return 0, nil, false
		}
		f := s.Fields[0]
		off, cur = off+f.Offset, f.Type
	}
	return 0, nil, false
}

// rustHash: hashbrown's RawTable inside HashMap (base.table) or HashSet
// (base.map.table): table.table holds bucket_mask, ctrl and items; bucket
// i is full when its control byte's top bit is clear, and its element (a
// (K, V) tuple, RawTable's T) is the i+1-th before ctrl.
func (c *containerReader) rustHash(kind string, via ...string) (*Container, bool) {
	ro, rt, ok := path(c.t, via...)
	if !ok {
		return nil, false
	}
	elem := templateParam(rt.Strip(), "T")
	io, it, ok1 := member(rt, "table")
	mo, _, ok2 := member(it, "bucket_mask")
	no, _, ok3 := member(it, "items")
	co, ct, ok4 := member(it, "ctrl")
	if !ok1 || !ok2 || !ok3 || !ok4 || elem == nil || elem.ByteSize() <= 0 {
		return nil, false
	}
	po, _, ok := rustPointer(ct)
	if !ok {
		return nil, false
	}
	base := ro + io
	mask, ok1 := c.word(base + mo)
	items, ok2 := c.word(base + no)
	ctrl, ok3 := c.word(base + co + po)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	c0 := &Container{Kind: kind, GDB: true, Indexed: true, Style: ChildMap}
	if kind == "HashSet" {
		c0.Style = ChildArray
	}
	buckets := mask + 1
	if items > buckets || buckets&mask != 0 || buckets > maxCount {
		c0.Summary = rustSize(kind)(items) + " <invalid>"
		return c0, true
	}
	c0.setCount(items, rustSize(kind))
	esize := uint64(elem.ByteSize())
	c0.children = func(start, n int) ([]Child, error) {
		p := newPage(start, n)
		// The control bytes, read in chunks.
		var chunk [256]byte
		for b := uint64(0); b < buckets && !p.full(); b += uint64(len(chunk)) {
			m := min(uint64(len(chunk)), buckets-b)
			if got, _ := c.f.ReadMemory(chunk[:m], ctrl+b); uint64(got) < m {
				return p.out, &MemoryError{Addr: ctrl + b + uint64(got)}
			}
			for i := uint64(0); i < m && !p.full(); i++ {
				if chunk[i]&0x80 != 0 {
					continue // an empty bucket
				}
				addr := ctrl - (b+i+1)*esize
				if err := p.meet(func(k int) (Child, error) { return c.hashChild(k, elem, addr, kind == "HashSet") }); err != nil {
					return p.out, err
				}
			}
		}
		return p.done(nil)
	}
	return c0, true
}

// hashChild is element k of a HashMap (a (K, V) tuple, keyed) or a
// HashSet (a (K, ()) tuple: its key alone) at addr.
func (c *containerReader) hashChild(k int, elem *Type, addr uint64, set bool) (Child, error) {
	v, err := c.load(elem, addr)
	if err != nil {
		return Child{}, err
	}
	if set {
		if ko, kt, ok := member(v.Type, "__0"); ok {
			if kv, ok := subValue(v, ko, kt); ok {
				return Child{Name: elemName(k), Value: kv}, nil
			}
		}
	}
	return c.child(k, v, ChildMap), nil
}

// rustRc: Rc (RcInner: strong, weak, value) and Arc (ArcInner: strong,
// weak, data), shown with their counts (the weak count without the one
// the strong references hold together, as rust-gdb says it).
func (c *containerReader) rustRc(kind, valueName string) (*Container, bool) {
	po, pt, ok := rustPointer(c.t)
	if !ok || pt.Elem.Strip() == nil {
		return nil, false
	}
	inner := pt.Elem.Strip()
	so, st, ok1 := member(inner, "strong")
	wo, wt, ok2 := member(inner, "weak")
	vo, vt, ok3 := member(inner, valueName)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	sw, swt, ok1 := rustWordType(st)
	ww, wwt, ok2 := rustWordType(wt)
	p, ok3 := c.word(po)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	strong, err1 := c.ptrAt(p + uint64(so+sw))
	weak, err2 := c.ptrAt(p + uint64(wo+ww))
	c0 := &Container{Kind: kind, GDB: true, Style: ChildNamed}
	if err1 != nil || err2 != nil {
		c0.Summary = kind + " <error: Cannot access memory at address 0x" + strconv.FormatUint(p, 16) + ">"
		return c0, true
	}
	weak--
	s, w := strconv.FormatUint(strong, 10), strconv.FormatInt(int64(weak), 10)
	c0.Summary = kind + "(strong=" + s + ", weak=" + w + ")"
	inn, err := c.load(inner, p)
	if err != nil {
		return c0, true
	}
	val, ok1 := subValue(inn, vo, vt)
	sv, ok2 := subValue(inn, so+sw, swt)
	wv, ok3 := subValue(inn, wo+ww, wwt)
	if !ok1 || !ok2 || !ok3 {
		return c0, true
	}
	// rust-gdb shows the weak count it computed, not the word.
	wv.Bytes = append([]byte(nil), wv.Bytes...)
	for i := range 8 {
		wv.Bytes[i] = byte(uint64(weak) >> (8 * i))
	}
	wv.Place = PlaceComputed
	kids := []Child{{Name: "value", Value: val}, {Name: "strong", Value: sv}, {Name: "weak", Value: wv}}
	c0.Count = len(kids)
	c0.children = listed(kids)
	return c0, true
}

// rustVecDeque: VecDeque {head, len, buf: RawVec}: element i is at
// (head + i) mod capacity in the buffer.
func (c *containerReader) rustVecDeque() (*Container, bool) {
	elem := templateParam(c.t, "T")
	ho, _, ok1 := member(c.t, "head")
	lo, _, ok2 := member(c.t, "len")
	bo, bt, ok3 := member(c.t, "buf")
	if !ok1 || !ok2 || !ok3 || elem == nil || elem.ByteSize() <= 0 {
		return nil, false
	}
	po, _, ok := rustPointer(bt)
	if !ok {
		return nil, false
	}
	capO, capT, ok := path(bt, "inner", "cap")
	if !ok {
		return nil, false
	}
	cw, ok := rustWord(capT)
	if !ok {
		return nil, false
	}
	head, _ := c.word(ho)
	n, _ := c.word(lo)
	ptr, _ := c.word(bo + po)
	capacity, _ := c.word(bo + capO + cw)
	c0 := &Container{Kind: "VecDeque", GDB: true, Indexed: true, Style: ChildArray}
	if n > capacity || head > capacity || capacity > maxCount {
		c0.Summary = rustSize("VecDeque")(n) + " <invalid>"
		return c0, true
	}
	c0.setCount(n, rustSize("VecDeque"))
	esize := uint64(elem.ByteSize())
	c0.children = indexed(func(i int) (Value, error) { return c.load(elem, ptr+((head+uint64(i))%capacity)*esize) })
	return c0, true
}

// rustSlice: &[T] {data_ptr, length}.
func (c *containerReader) rustSlice() (*Container, bool) {
	po, pt, ok1 := member(c.t, "data_ptr")
	lo, _, ok2 := member(c.t, "length")
	p := pt.Strip()
	if !ok1 || !ok2 || p == nil || p.Kind != KindPointer || p.Elem.ByteSize() <= 0 {
		return nil, false
	}
	ptr, _ := c.word(po)
	n, _ := c.word(lo)
	c0 := &Container{Kind: "slice", GDB: true, Indexed: true, Style: ChildArray}
	if c0.setCount(n, rustSize(c.t.Name)) {
		c0.children = c.contiguous(ptr, p.Elem)
	}
	return c0, true
}

// rustString: String {vec: Vec<u8> {buf, len}}, printed as its text.
func (c *containerReader) rustString() (*Container, bool) {
	vo, vt, ok := member(c.t, "vec")
	if !ok {
		return nil, false
	}
	lo, _, ok1 := member(vt, "len")
	po, _, ok2 := rustPointer(vt)
	if !ok1 || !ok2 {
		return nil, false
	}
	n, ok1 := c.word(vo + lo)
	p, ok2 := c.word(vo + po)
	if !ok1 || !ok2 {
		return nil, false
	}
	text, _ := c.text(p, n)
	return &Container{Kind: "String", GDB: true, Summary: text}, true
}

// rustVec: Vec {buf: RawVec, len}: len elements from buf's pointer (a
// *u8 in newer Rust: the element type is Vec's T).
func (c *containerReader) rustVec() (*Container, bool) {
	elem := templateParam(c.t, "T")
	bo, bt, ok1 := member(c.t, "buf")
	lo, _, ok2 := member(c.t, "len")
	if !ok1 || !ok2 || elem == nil || elem.ByteSize() <= 0 {
		return nil, false
	}
	po, _, ok := rustPointer(bt)
	if !ok {
		return nil, false
	}
	ptr, ok1 := c.word(bo + po)
	n, ok2 := c.word(lo)
	if !ok1 || !ok2 {
		return nil, false
	}
	c0 := &Container{Kind: "Vec", GDB: true, Indexed: true, Style: ChildArray}
	if c0.setCount(n, rustSize("Vec")) {
		c0.children = c.contiguous(ptr, elem)
	}
	return c0, true
}

// rustBTree: BTreeMap {root: Option<NodeRef {height, node}>, length} and
// BTreeSet {map: BTreeMap}, as rust-gdb shows them: BTreeMap(size=2) =
// {[1] = 10, [2] = 20}, BTreeSet(size=2) = {1, 2}. The walk is in order:
// in a node of len keys, edge i's subtree, then key i. Leaf and internal
// nodes are #[repr(C)]: an InternalNode is its LeafNode, then the edges
// (so the internal node type is not looked up by name). Bounded: height
// at most 48, every node visited once.
func (c *containerReader) rustBTree(set bool) (*Container, bool) {
	mt := c.t
	var mo int64
	if set {
		o, t, ok := member(c.t, "map")
		if !ok {
			return nil, false
		}
		mo, mt = o, t.Strip()
	}
	ro, rt, ok1 := member(mt, "root")
	lo, _, ok2 := member(mt, "length")
	if !ok1 || !ok2 {
		return nil, false
	}
	// Option<NodeRef>: the Some variant's __0.
	rs := rt.Strip()
	if rs == nil || rs.Variants == nil {
		return nil, false
	}
	var nref *Type
	var no int64
	for _, v := range rs.Variants.Variants {
		if v.Field.Name == "Some" {
			if o, t, ok := member(v.Field.Type, "__0"); ok {
				nref, no = t, v.Field.Offset+o
			}
		}
	}
	if nref == nil {
		return nil, false
	}
	ho, _, ok1 := member(nref, "height")
	po, pt, ok2 := member(nref, "node")
	if !ok1 || !ok2 {
		return nil, false
	}
	ppo, ppt, ok := rustPointer(pt)
	if !ok || ppt.Elem.Strip() == nil {
		return nil, false
	}
	leaf := ppt.Elem.Strip()
	lenO, _, ok1 := member(leaf, "len")
	ko, kt, ok2 := member(leaf, "keys")
	vo, vt, ok3 := member(leaf, "vals")
	ka, va := kt.Strip(), vt.Strip()
	if !ok1 || !ok2 || !ok3 || ka == nil || va == nil || ka.Kind != KindArray || va.Kind != KindArray || leaf.ByteSize() <= 0 {
		return nil, false
	}
	kin, kio := rustPayload(ka.Elem)
	vin, vio := rustPayload(va.Elem)
	ksz, vsz := ka.Elem.ByteSize(), va.Elem.ByteSize()
	if kin == nil || vin == nil || ksz < 0 || vsz < 0 {
		return nil, false
	}
	edges := (leaf.ByteSize() + 7) / 8 * 8
	kind := "BTreeMap"
	if set {
		kind = "BTreeSet"
	}
	n, ok1 := c.word(mo + lo)
	height, ok2 := c.word(mo + ro + no + ho)
	root, ok3 := c.word(mo + ro + no + po + ppo)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	c0 := &Container{Kind: kind, GDB: true, Indexed: true, Style: ChildMap}
	if set {
		c0.Style = ChildArray
	}
	if n > MaxContainerElements || height > 48 {
		c0.Summary = rustSize(kind)(n) + " <invalid>"
		return c0, true
	}
	c0.setCount(n, rustSize(kind))
	c0.children = func(start, cnt int) ([]Child, error) {
		p, seen := newPage(start, cnt), nodeSet{}
		var walk func(node, h uint64) error
		walk = func(node, h uint64) error {
			if len(seen) > MaxContainerElements || !seen.visit(node) {
				return ErrBadContainer
			}
			var lb [2]byte
			if got, _ := c.f.ReadMemory(lb[:], node+uint64(lenO)); got < 2 {
				return &MemoryError{Addr: node + uint64(lenO)}
			}
			keys := uint64(lb[0]) | uint64(lb[1])<<8
			if keys > uint64(ka.Count) {
				return ErrBadContainer
			}
			for i := uint64(0); i <= keys && !p.full(); i++ {
				if h > 0 {
					child, err := c.ptrAt(node + uint64(edges) + 8*i)
					if err != nil {
						return err
					}
					if err := walk(child, h-1); err != nil {
						return err
					}
				}
				if i == keys || p.full() {
					continue
				}
				err := p.meet(func(found int) (Child, error) {
					k, err := c.load(kin, node+uint64(ko)+i*uint64(ksz)+uint64(kio))
					if err != nil || set {
						return Child{Name: elemName(found), Value: k}, err
					}
					v, err := c.load(vin, node+uint64(vo)+i*uint64(vsz)+uint64(vio))
					return Child{Key: &k, Value: v}, err
				})
				if err != nil {
					return err
				}
			}
			return nil
		}
		return p.done(walk(root, height))
	}
	return c0, true
}

// rustPayload finds the value inside MaybeUninit<T> (value: ManuallyDrop
// {value: T, or MaybeDangling<T>(T) in newer Rust}): its type and offset.
func rustPayload(t *Type) (*Type, int64) {
	var off int64
	cur := t
	for depth := 0; depth < 4; depth++ {
		s := cur.Strip()
		if s == nil || !s.IsComposite() {
			break
		}
		if o, mt, ok := member(s, "value"); ok && len(s.Fields) <= 2 {
			off, cur = off+o, mt
			continue
		}
		if strings.HasPrefix(s.Name, "MaybeDangling<") {
			if o, mt, ok := member(s, "__0"); ok {
				off, cur = off+o, mt
				continue
			}
		}
		break
	}
	return cur, off
}
