package expr

import "testing"

// TestRustTupleField: self.0 and t.1.0 name a Rust tuple's fields (__0,
// __1 in DWARF), as gdb's Rust syntax does; a number after anything but a
// name or a closing bracket stays a number ((double).5 is a cast).
func TestRustTupleField(t *testing.T) {
	member := func(n Node) (*Member, bool) { m, ok := n.(*Member); return m, ok }
	n, err := Parse("self.0", nil)
	if m, ok := member(n); err != nil || !ok || m.Name != "__0" {
		t.Fatalf("self.0: %#v, %v", n, err)
	}
	n, err = Parse("t.1.0", nil)
	if m, ok := member(n); err != nil || !ok || m.Name != "__0" {
		t.Fatalf("t.1.0: %#v, %v", n, err)
	} else if in, ok := member(m.X); !ok || in.Name != "__1" {
		t.Fatalf("t.1.0: inner %#v", m.X)
	}
	n, err = Parse("a[2].1", nil)
	if m, ok := member(n); err != nil || !ok || m.Name != "__1" {
		t.Fatalf("a[2].1: %#v, %v", n, err)
	}
	isType := func(name string) bool { return name == "double" }
	if n, err = Parse("(double).5", isType); err != nil {
		t.Fatalf("(double).5: %v", err)
	} else if _, ok := member(n); ok {
		t.Fatalf("(double).5 parsed as a member: %#v", n)
	}
	if _, err = Parse("1 + .5", nil); err != nil {
		t.Fatalf("1 + .5: %v", err)
	}
	if _, err = Parse("sizeof .5", nil); err != nil {
		t.Fatalf("sizeof .5: %v", err)
	}
}
