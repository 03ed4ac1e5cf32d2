package profiling

import "testing"

// Frames named from ELF symbols (--no-inline) are demangled through
// sonde's one demangler entry, as perf prints them: Rust legacy names keep
// their leading underscores and lose their hash, C++ names lose their
// parameter lists, and what is not mangled stays as it is.
func TestDemangledAsPerfPrints(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"_ZN3std3sys9backtrace28__rust_begin_short_backtrace17h5a9d1c3e7f20b46aE", "std::sys::backtrace::__rust_begin_short_backtrace"},
		{"_ZN2ns3addEii", "ns::add"},
		{"main", "main"},
		{"_Z", "_Z"},
	} {
		if got := demangled(c.in); got != c.want {
			t.Errorf("demangled(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
