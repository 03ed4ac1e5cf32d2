package variables

import "strconv"

// What every container printer shares, so that each states only its
// layout: the count read from the target and the summary it makes
// (setCount), children listed from a slice (listed), by index (indexed),
// or met one after another by a walk that pages them (page) and visits
// each node once (nodeSet; walk for linked nodes).

// elemName names element i as gdb's printers do ("[3]").
func elemName(i int) string { return "[" + strconv.Itoa(i) + "]" }

// maxCount bounds a count read from the target: more is memory not yet
// constructed or overwritten.
const maxCount = 1 << 31

// setCount gives c0 the count n read from the target and the summary
// summary(n) makes of it. A count past maxCount leaves c0 without children
// and its summary marked <invalid>; setCount then returns false.
func (c0 *Container) setCount(n uint64, summary func(n uint64) string) bool {
	if n > maxCount {
		c0.Summary = summary(n) + " <invalid>"
		return false
	}
	c0.Count = int(n)
	c0.Summary = summary(n)
	return true
}

// withElements is libstdc++'s summary: "std::map with 3 elements".
func withElements(kind string) func(n uint64) string {
	return func(n uint64) string {
		return kind + " with " + strconv.FormatUint(n, 10) + plural(int(min(n, 2)), " element", " elements")
	}
}

// rustSize is rust-gdb's summary: "Vec(size=3)".
func rustSize(kind string) func(n uint64) string {
	return func(n uint64) string { return kind + "(size=" + strconv.FormatUint(n, 10) + ")" }
}

// listed makes the children function of children known in full.
func listed(kids []Child) func(start, n int) ([]Child, error) {
	return func(start, n int) ([]Child, error) { return kids[start : start+n], nil }
}

// indexed makes the children function of a container that reads element
// i by itself (value(i)), named [i].
func indexed(value func(i int) (Value, error)) func(start, n int) ([]Child, error) {
	return func(start, n int) ([]Child, error) {
		var out []Child
		for i := start; i < start+n; i++ {
			v, err := value(i)
			if err != nil {
				return out, err
			}
			out = append(out, Child{Name: elemName(i), Value: v})
		}
		return out, nil
	}
}

// page gathers children start..end-1 of a walk that meets a container's
// elements one after another: those before start are counted, not read.
type page struct {
	start, end, met int
	out             []Child
}

func newPage(start, n int) *page { return &page{start: start, end: start + n} }

// full reports whether the walk has met every child wanted.
func (p *page) full() bool { return p.met >= p.end }

// meet counts the next element the walk meets; one the page holds is made
// by child, given its index.
func (p *page) meet(child func(i int) (Child, error)) error {
	i := p.met
	p.met++
	if i < p.start {
		return nil
	}
	ch, err := child(i)
	if err != nil {
		return err
	}
	p.out = append(p.out, ch)
	return nil
}

// done returns the children gathered, with err, or ErrBadContainer when
// the walk ended before it met them all (the structure holds fewer elements
// than its count says).
func (p *page) done(err error) ([]Child, error) {
	if err == nil && !p.full() {
		err = ErrBadContainer
	}
	return p.out, err
}

// nodeSet is a walk's cycle check: the nodes it has visited.
type nodeSet map[uint64]bool

// visit marks node visited; false for a null node or one visited before.
func (s nodeSet) visit(node uint64) bool {
	if node == 0 || s[node] {
		return false
	}
	s[node] = true
	return true
}

// walk makes the children function of a container whose nodes are linked
// one after another: first is the first node, next the one after a node,
// valueAt where a node's element is.
func (c *containerReader) walk(elem *Type, style ChildStyle, first func() (uint64, error), next func(node uint64) (uint64, error), valueAt func(node uint64) uint64) func(start, n int) ([]Child, error) {
	return func(start, n int) ([]Child, error) {
		node, err := first()
		if err != nil {
			return nil, err
		}
		p, seen := newPage(start, n), nodeSet{}
		for {
			if !seen.visit(node) {
				return p.out, ErrBadContainer
			}
			err := p.meet(func(i int) (Child, error) {
				v, err := c.load(elem, valueAt(node))
				if err != nil {
					return Child{}, err
				}
				return c.child(i, v, style), nil
			})
			if err != nil || p.full() {
				return p.done(err)
			}
			if node, err = next(node); err != nil {
				return p.out, err
			}
		}
	}
}

// countLinks counts the nodes linked from first through the pointer at
// next in each, up to end (or a null node, a cycle, an unreadable link or
// MaxContainerElements): for the lists that keep no count.
func (c *containerReader) countLinks(first, end uint64, next int64) int {
	n, seen := 0, nodeSet{}
	for node := first; node != end && seen.visit(node) && n < MaxContainerElements; n++ {
		p, err := c.ptrAt(node + uint64(next))
		if err != nil {
			break
		}
		node = p
	}
	return n
}
