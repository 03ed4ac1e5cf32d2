package debugfile

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

func needTool(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s not installed: this test needs it to prepare its inputs", n)
		}
	}
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func buildProg(t testing.TB, name string, flags ...string) string {
	t.Helper()
	return testprog.Build(t, testprog.Spec{Sources: []string{"sym_plt.c"}, Flags: flags, Name: name})
}

func openELF(t testing.TB, path string) *elf.File {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// split copies bin into dir as a stripped binary (keeping its build-id) and
// a separate --only-keep-debug file, the way distributions package them.
func split(t testing.TB, bin, dir string) (stripped, debug string) {
	t.Helper()
	needTool(t, "objcopy")
	stripped, debug = filepath.Join(dir, "prog"), filepath.Join(dir, "prog.debug")
	os.MkdirAll(dir, 0o755)
	run(t, "objcopy", "--only-keep-debug", bin, debug)
	run(t, "objcopy", "--strip-all", bin, stripped)
	return stripped, debug
}

// hasFunction reports whether f's DWARF describes a function called name:
// proof that the debug file found is usable, compressed sections included.
func hasFunction(t testing.TB, f *elf.File, name string) bool {
	t.Helper()
	d, err := f.DWARF()
	if err != nil {
		t.Fatalf("DWARF: %v", err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatalf("DWARF: %v", err)
		}
		if e == nil {
			return false
		}
		if n, _ := e.Val(0x03 /* DW_AT_name */).(string); n == name && e.Tag == 0x2e /* DW_TAG_subprogram */ {
			return true
		}
	}
}

func attemptErr(r *Result, m Method, path string) error {
	for _, a := range r.Tried {
		if a.Method == m && a.Path == path {
			return a.Err
		}
	}
	return nil
}
