package demangler

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// GNU's demangler (libiberty's cp-demangle: c++filt, addr2line, gdb, and
// perf through it or libstdc++'s abi::__cxa_demangle) writes "> >" for
// nested template closers, except where the inner list ends in an empty
// argument pack ("AnalysisManager<llvm::Function>>" for
// AnalysisManager<Function, pack{}>): it prints ", " before the pack,
// takes the two bytes back when the pack printed nothing, but its
// last-character memory still says ' ', so no space goes before the next
// '>'. LLVM's libraries are full of such names (PassManager<...>::run is in
// most of clang's stacks). github.com/ianlancetaylor/demangle always
// writes the space; to print what the GNU tools print, each empty pack of
// a template's arguments is replaced by a marker that prints as a name
// (so the printer's last character is not '>') and removed from the text
// after.

// packMarker prints where an empty argument pack stood; it cannot occur in
// a demangled name.
const packMarker = "\x01"

// maxVisits bounds markEmptyPacks's walk (nodes); real names have hundreds.
const maxVisits = 1 << 16

// markPacks marks a's empty packs (markEmptyPacks) when its name may hold
// one (an empty pack is "JE") and cannot hold the marker itself.
func markPacks(name string, a demangle.AST) bool {
	if !strings.Contains(name, "JE") || strings.Contains(name, packMarker) {
		return false
	}
	return markEmptyPacks(a)
}

// markEmptyPacks replaces every empty argument pack among a template's
// arguments in a by a marker name, reporting whether it replaced any.
func markEmptyPacks(a demangle.AST) bool {
	marked := false
	visits := 0
	a.Traverse(func(n demangle.AST) bool {
		// Substitutions share subtrees: a hostile name's tree can be
		// exponentially larger than the name, so the walk is bounded.
		if visits++; visits > maxVisits {
			return false
		}
		if t, ok := n.(*demangle.Template); ok {
			for i, arg := range t.Args {
				if emptyPack(arg) {
					t.Args[i] = &demangle.Name{Name: packMarker}
					marked = true
				}
			}
		}
		return true
	})
	return marked
}

// emptyPack reports whether a is an argument pack that prints nothing.
func emptyPack(a demangle.AST) bool {
	p, ok := a.(*demangle.ArgumentPack)
	if !ok {
		return false
	}
	for _, e := range p.Args {
		if !emptyPack(e) {
			return false
		}
	}
	return true
}

// unmark removes the markers and the separators printed before them.
func unmark(s string) string {
	s = strings.ReplaceAll(s, ", "+packMarker, "")
	return strings.ReplaceAll(s, packMarker, "")
}

// rustEmptyNames drops the "::" the library prints before an empty
// identifier of a lowercase (internal) v0 namespace: rustc's tuple-struct
// constructors used as functions ("NcB13_0", a map over DebugByte's
// constructor) print as the path alone in rustc-demangle and binutils
// ("Map<..., gimli::read::endian_slice::DebugByte>"), where the library
// wrote "DebugByte::>" ("<Wrapper:: as FnMut<(u8,)>>::call_mut"). Rust
// paths never hold "::" before a closing bracket, a comma, " as " or the
// end.
func rustEmptyNames(s string) string {
	if !strings.Contains(s, "::") {
		return s
	}
	for _, r := range [][2]string{{"::>", ">"}, {"::, ", ", "}, {"::)", ")"}, {"::]", "]"}, {":: as ", " as "}} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return strings.TrimSuffix(s, "::")
}
