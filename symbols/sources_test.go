package symbols_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// TestSourceFiles: the primary file and the headers with code (libstdc++'s
// templates), absolute, each once; every one is a file gdb's "info
// sources" knows.
func TestSourceFiles(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"pp_cxx.cc"}, Flags: []string{"-O0", "-std=c++17"}, Name: "pp_cxx"})
	b, err := symbols.Open(exe, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := b.SourceFiles()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] || !filepath.IsAbs(f) {
			t.Errorf("%s listed twice or not absolute", f)
		}
		seen[f] = true
	}
	src := testprog.Source("pp_cxx.cc")
	var tree string
	for _, f := range files {
		if strings.HasSuffix(f, "/bits/stl_tree.h") {
			tree = f
		}
	}
	if !seen[src] || tree == "" {
		t.Fatalf("SourceFiles lacks %s or stl_tree.h: %v", src, files)
	}
	gdbtest.Need(t)
	out := gdbtest.Batch(t, "-ex", "info sources", exe)
	known := map[string]bool{}
	for _, f := range strings.FieldsFunc(string(out), func(r rune) bool { return r == ',' || r == '\n' }) {
		known[strings.TrimSpace(f)] = true
	}
	for _, f := range files {
		if !known[f] {
			t.Errorf("%s is not among gdb's sources", f)
		}
	}
	t.Logf("%d files", len(files))
}
