package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// The seventh real-program trial of `sonde dap` (bench/dap/REAL-PROGRAMS.md):
// testdata/dapreal/xmlscan.cc over Debian's pugixml 1.13, driven by
// Microsoft's DebugClient (testdata/dapclient/trial7.js), every stop's
// watches, locals and steps compared with gdb's at the same stop.

// trial7Pugixml builds pugixml.cpp from Debian's source (once, into
// ~/.cache/sonde-debsrc/pugixml, as an object) and xmlscan over it (once per
// source, under TMPDIR); it returns a directory with a link to xmlscan and
// pugixml's source directory.
func trial7Pugixml(t *testing.T) (dir, src string) {
	root := buildDebianSource(t, "pugixml", "pugixml-*", func(t *testing.T, src, out string) {
		debsrcRun(t, src, "g++", "-g", "-O0", "-std=c++17", "-c", "-o", filepath.Join(out, "pugixml.o"), filepath.Join("src", "pugixml.cpp"))
	})
	srcs, _ := filepath.Glob(filepath.Join(root, "pugixml-*"))
	if len(srcs) != 1 {
		t.Fatalf("pugixml's source directory: %v", srcs)
	}
	prog := testprog.Source("dapreal/xmlscan.cc")
	text, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append([]byte(root), text...))
	cache := filepath.Join(os.TempDir(), "sonde-trial7", "xmlscan-"+hex.EncodeToString(sum[:8]))
	if !dcFileExists(filepath.Join(cache, ".done")) {
		os.RemoveAll(cache)
		if err := os.MkdirAll(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		debsrcRun(t, cache, "g++", "-g", "-O0", "-std=c++17", "-I"+filepath.Join(srcs[0], "src"), "-o", "xmlscan", prog, filepath.Join(root, "pugixml.o"))
		if err := os.WriteFile(filepath.Join(cache, ".done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir = t.TempDir()
	if err := os.Symlink(filepath.Join(cache, "xmlscan"), filepath.Join(dir, "xmlscan")); err != nil {
		t.Fatal(err)
	}
	return dir, srcs[0]
}

// TestDAPDebugClientPugixml: a pugixml tree walker's for_each (a virtual
// function, its node by reference; a reference member; a member of a base
// class the unit only declares), C++ bools, a map and a vector, against
// gdb's print and info locals; stepIn into the library's attribute() and
// as_int(), stepOut, next against gdb's step/finish/next; summarize's
// references to a string, a struct, a vector and a bool.
func TestDAPDebugClientPugixml(t *testing.T) {
	node, modules := dcClient(t)
	gdbtest.Need(t)
	dir, src := trial7Pugixml(t)
	runNodeScenario(t, node, modules, "trial7.js", dir, []string{"--mode", "pugixml", "--dir", dir, "--src", src}, []string{testprog.Sonde(t), "dap"})
}
