package variables_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// TestRustContainersMatchGDB prints pp_rust's HashMap, HashSet, Rc, Arc,
// VecDeque and slice with Format's Pretty option and compares them with
// gdb running rust-gdb's printers (rustc's gdb_lookup.py) at the same stop:
// whole values, elements in Rust's syntax.
func TestRustContainersMatchGDB(t *testing.T) {
	sysroot, err := exec.Command(testprog.RequireRustc(t), "--print", "sysroot").Output()
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(strings.TrimSpace(string(sysroot)), "lib/rustlib/etc")
	if !fileExists(filepath.Join(etc, "gdb_lookup.py")) {
		t.Skip("SKIP: rustc's gdb printers are not installed")
	}
	exe := testprog.BuildRust(t, "pp_rust.rs", "pp_rust", "-C", "opt-level=0")
	whole := []string{"hm", "hs", "empty", "arc", "dq", "sl", "names", "rc", "rc2", "bx", "s", "vp", "bt", "bs", "bt_empty", "vc"}
	var summaries []string
	stop := vartest.GDBStopWith(t, exe, "pp_rust::stop_here", map[int][]string{1: append(whole, summaries...)},
		[]string{"python import sys; sys.path.insert(0, '" + etc + "')", "source " + filepath.Join(etc, "gdb_load_rust_pretty_printers.py")})
	if !strings.HasPrefix(stop.Results[1]["hm"].Value, "HashMap(size=5)") {
		t.Skipf("SKIP: rust-gdb's printers did not load (hm = %q)", stop.Results[1]["hm"].Value)
	}
	f, r := stop.Frame(t, 1)
	show := func(name string) string {
		v := findVar(t, r, f, name)
		if v == nil {
			t.Fatalf("%s: not found", name)
		}
		val, err := r.Read(v, f)
		return r.Format(val, err, f, variables.FormatOptions{Pretty: true})
	}
	for _, name := range whole {
		if got, want := show(name), stop.Results[1][name].Value; got != want {
			t.Errorf("%s:\nsonde %s\ngdb   %s", name, got, want)
		}
	}
	for _, name := range summaries {
		got, want := show(name), stop.Results[1][name].Value
		if g, w, _ := strings.Cut(got, " = "); g != strings.SplitN(want, " = ", 2)[0] {
			t.Errorf("%s:\nsonde %s\ngdb   %s (%s)", name, g, w, want)
		}
	}
	if got := show("names"); got != `HashMap(size=1) = {["a"] = pp_rust::Point {x: 1, y: 2}}` {
		t.Errorf("names: %s", got)
	}
}
