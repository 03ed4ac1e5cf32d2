package lint

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/sondedbg/sonde"

// frontEnds reach the analysis layers through session and the model only
// (ARCHITECTURE.md): they must not import what parses ELF, DWARF, CFI or
// /proc, nor each other.
var frontEnds = []string{"cmd/sonde", "tcf/services", "dap"}

// parsers are the packages a front end may not import: the readers of files
// and of /proc, which session wraps.
var parsers = []string{
	"debug/elf", "debug/dwarf", "debug/gosym", "debug/pe", "debug/macho",
	module + "/dwarf", module + "/internal/leb128", module + "/modules",
	module + "/procmaps", module + "/unwind/cfi", module + "/symbols/elfsym",
	module + "/symbols/debugfile", module + "/unwind/snapshot",
}

// TestFrontEndImports fails when a front end imports a parser, dap imports
// tcf, or tcf imports any package of the module but internal/jsonstr (a
// leaf of the standard library, the escaper both protocols share).
func TestFrontEndImports(t *testing.T) {
	imports := listImports(t)
	banned := map[string]bool{}
	for _, p := range parsers {
		banned[p] = true
	}
	for _, fe := range frontEnds {
		for _, imp := range imports[module+"/"+fe] {
			if banned[imp] || strings.Contains(imp, "/internal/") && strings.HasPrefix(imp, module+"/symbols") {
				t.Errorf("%s imports %s: front ends reach it through session (see ARCHITECTURE.md)", fe, imp)
			}
		}
	}
	for _, imp := range imports[module+"/dap"] {
		if imp == module+"/tcf" || strings.HasPrefix(imp, module+"/tcf/") {
			t.Errorf("dap imports %s: front ends do not share protocol code", imp)
		}
	}
	for _, imp := range imports[module+"/tcf"] {
		if strings.HasPrefix(imp, module+"/") && imp != module+"/internal/jsonstr" {
			t.Errorf("tcf imports %s: the protocol package imports no sonde package (but the JSON string escaper it shares with dap)", imp)
		}
	}
	for _, imp := range imports[module+"/internal/jsonstr"] {
		if strings.HasPrefix(imp, module+"/") {
			t.Errorf("internal/jsonstr imports %s: tcf imports it, so it imports no sonde package", imp)
		}
	}
	// Nothing imports a front end (tests and benchmarks aside).
	for pkg, imps := range imports {
		for _, imp := range imps {
			if imp == module+"/cmd/sonde" || (imp == module+"/dap" && pkg != module+"/cmd/sonde") {
				t.Errorf("%s imports the front end %s", pkg, imp)
			}
			if (imp == module+"/tcf/services") && pkg != module+"/cmd/sonde" {
				t.Errorf("%s imports the front end %s", pkg, imp)
			}
		}
	}
}

// listImports maps each package of the module to its non-test imports.
func listImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		imps := f[1:]
		sort.Strings(imps)
		m[f[0]] = imps
	}
	return m
}
