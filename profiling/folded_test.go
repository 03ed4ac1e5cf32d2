package profiling

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// flamegraphLine is how flamegraph.pl and inferno split a folded line: the
// stack, then the last whitespace-separated number; a stack that itself
// ends so makes the line a differential one (two counts).
var flamegraphLine = regexp.MustCompile(`^(.*)\s+?(\d+(?:\.\d*)?)$`)

// checkFoldedLine parses one line as flamegraph.pl would and says what
// breaks it: it must hold one count, want frames, no differential second
// count, valid UTF-8 and no control character (the SVG is XML).
func checkFoldedLine(line string, frames int, count uint64) string {
	m := flamegraphLine.FindStringSubmatch(line)
	if m == nil {
		return "no count"
	}
	if n, err := strconv.ParseUint(m[2], 10, 64); err != nil || n != count {
		return "count " + m[2]
	}
	if flamegraphLine.MatchString(m[1]) {
		return "read as a differential line"
	}
	if got := len(strings.Split(m[1], ";")); got != frames {
		return strconv.Itoa(got) + " frames"
	}
	if !utf8.ValidString(line) {
		return "not UTF-8"
	}
	for _, r := range line {
		if r < 0x20 || r == 0x7f {
			return "a control character"
		}
	}
	return ""
}

// TestFoldedNamesKeepTheFormat: names that would break a folded line (a
// ';', a newline, a trailing number, bytes that are not UTF-8) are kept
// from it, and demangled names with spaces and brackets pass unchanged.
func TestFoldedNamesKeepTheFormat(t *testing.T) {
	cases := []struct{ name, want string }{
		{"(anonymous namespace)::churn(shapes::Grid<double>&, int)", "(anonymous namespace)::churn(shapes::Grid<double>&, int)"},
		{"main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()(int) const"},
		{"<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop", "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop"},
		{"LFoo;::bar", "LFoo:::bar"},
		{"two\nlines", "two lines"},
		{"tab\tbed", "tab bed"},
		{"JS:foo /x.js 12", "JS:foo /x.js_12"},
		{"ends in  3.5", "ends in__3.5"},
		{"v2", "v2"},
		{"bad\xffbyte", "bad\uFFFDbyte"},
		{"é ü", "é ü"},
	}
	for _, c := range cases {
		f := NewFolded()
		f.Add(&Sample{Comm: "comm 7", Frames: []Frame{{Function: c.name}, {Function: "main"}}})
		var buf bytes.Buffer
		if _, err := f.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		line := strings.TrimSuffix(buf.String(), "\n")
		if want := "comm_7;main;" + c.want + " 1"; line != want {
			t.Errorf("%q: line %q, want %q", c.name, line, want)
		}
		if why := checkFoldedLine(line, 3, 1); why != "" {
			t.Errorf("%q: line %q: %s", c.name, line, why)
		}
	}
}

// FuzzFoldedName: whatever a function is called, its folded line reads back
// as flamegraph.pl reads it: one count, its frames, no second count.
func FuzzFoldedName(f *testing.F) {
	f.Add("a;b", "comm")
	f.Add("x 12", "c 1")
	f.Add("\xff\n", "")
	f.Fuzz(func(t *testing.T, name, comm string) {
		fd := NewFolded()
		fd.Add(&Sample{Comm: comm, Frames: []Frame{{Function: name}}})
		fd.Add(&Sample{Comm: comm, Frames: []Frame{{Function: name}}})
		var buf bytes.Buffer
		if _, err := fd.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		line := strings.TrimSuffix(buf.String(), "\n")
		if strings.Contains(line, "\n") {
			t.Fatalf("%q makes more than one line: %q", name, line)
		}
		if why := checkFoldedLine(line, 2, 2); why != "" {
			t.Fatalf("name %q comm %q: line %q: %s", name, comm, line, why)
		}
	})
}
