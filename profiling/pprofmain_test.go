package profiling

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestPprofMainThroughSymlink records perf_spin run through a symlink with a
// longer name, as Debian's /usr/bin/fdfind runs /usr/lib/cargo/bin/fd: the
// command name is the link's, the mapped file the target's, and pprof's
// first mapping ("File:" of -top, the binary -http names) must still be the
// program, not the dynamic linker mapped before it.
func TestPprofMainThroughSymlink(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
	dir := t.TempDir()
	link := filepath.Join(dir, filepath.Base(prog)+"_alias")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, link, "200")
	rec, err := OpenRecording(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	pp := NewPprof()
	comm := ""
	if err := rec.Each(func(s *Sample) error { comm = s.Comm; pp.Add(s); return nil }); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pp.Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if comm == filepath.Base(prog) {
		t.Fatalf("the command name is the program's (%q), not the link's: the test shows nothing", comm)
	}
	if len(p.Mapping) == 0 || p.Mapping[0].File != prog {
		t.Errorf("comm %q: pprof's first mapping %v, want %s", comm, p.Mapping[0], prog)
	}
}
