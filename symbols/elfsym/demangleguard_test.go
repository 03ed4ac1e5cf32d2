package elfsym

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestByNameSkipsDemanglingForCNames: looking a C name up in a C++ program
// that has no symbol of that name (a C call site's callee searched in every
// module) does not demangle the program's symbols — that cost a third of a
// second of CPU in one sonde stack of beam.smp — while C++ functions of the
// global namespace, external or static, are still found by their plain
// names, and other C++ names by their demangled ones.
func TestByNameSkipsDemanglingForCNames(t *testing.T) {
	needTool(t, "g++")
	dir := t.TempDir()
	src := `namespace ns { __attribute__((noinline)) int inner(int x) { return x * 3; } }
__attribute__((noinline)) int global_fn(int x) { return ns::inner(x) + 1; }
__attribute__((noinline)) static int local_fn(int x) { return global_fn(x) - 1; }
int main(int argc, char **) { return local_fn(argc); }
`
	if err := os.WriteFile(filepath.Join(dir, "g.cc"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "g")
	if out, err := exec.Command("g++", "-O1", "-o", bin, filepath.Join(dir, "g.cc")).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	tab := openTable(t, bin)
	if got := tab.ByName("no_such_c_function"); len(got) != 0 {
		t.Errorf("ByName(no_such_c_function) = %v", got)
	}
	if tab.byDemangled != nil {
		t.Errorf("a C name's miss built the demangled index (%d names)", len(tab.byDemangled))
	}
	for name, mangled := range map[string]string{"global_fn": "_Z9global_fni", "local_fn": "_ZL8local_fni", "ns::inner": "_ZN2ns5innerEi", "ns::inner(int)": "_ZN2ns5innerEi"} {
		got := openTable(t, bin).ByName(name)
		if len(got) != 1 || got[0].Name != mangled {
			t.Errorf("ByName(%q) = %+v, want %s", name, got, mangled)
		}
	}
}
