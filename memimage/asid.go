package memimage

import "fmt"

// Wildcard is the "unknown" value of an ASID field; it matches any value.
const Wildcard = ^uint64(0)

// ASID identifies an address space. It has two fields so that one image can
// tell apart both processes and their incarnations: for a ptrace or perf
// target, Space is the pid and Generation counts execs of that pid; for Intel
// PT traces, Space is CR3 and Generation the VMCS base, exactly libipt's
// pt_asid. Either field may be Wildcard.
type ASID struct {
	Space      uint64
	Generation uint64
}

// AnyASID matches every address space. Sections added with it are visible in
// all of them, and reads with it see sections of every address space.
var AnyASID = ASID{Space: Wildcard, Generation: Wildcard}

// Matches reports whether a and b may name the same address space: every field
// is equal or Wildcard on either side. Matching is symmetric but not
// transitive.
func (a ASID) Matches(b ASID) bool {
	return (a.Space == b.Space || a.Space == Wildcard || b.Space == Wildcard) &&
		(a.Generation == b.Generation || a.Generation == Wildcard || b.Generation == Wildcard)
}

func (a ASID) String() string {
	f := func(v uint64) string {
		if v == Wildcard {
			return "*"
		}
		return fmt.Sprint(v)
	}
	return "asid(" + f(a.Space) + "/" + f(a.Generation) + ")"
}
