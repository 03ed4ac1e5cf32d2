package profiling

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols/elfsym"
)

// TestLibcAliasesMatchPerf records a program living in libc functions that
// have several symbols at one address (recv is recv, __recv, __libc_recv
// and __GI___recv) and compares, with --no-inline, the name of every frame
// in libc with perf script's: the same pc (the same offset into it) must be
// named by the same alias, as perf's symbols__fixup_duplicate keeps it.
func TestLibcAliasesMatchPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_libc_aliases.c"}, Flags: []string{"-O2"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "2")
	perf := perfScript(t, out, "--no-inline", "-F", "tid,time,ip,sym,symoff,dso")
	got, _ := sondeSamplesNamed(t, out, Options{NoInline: true}, ScriptName)
	compared, differ := 0, 0
	names := map[string]int{}
	for _, w := range perf {
		g := got[w.key]
		for i := range w.names {
			if i >= len(g.names) || !isLibc(w.mods[i]) || !isLibc(g.mods[i]) {
				continue
			}
			wn, woff, _ := strings.Cut(w.names[i], "+0x")
			gn, goff, _ := strings.Cut(g.names[i], "+0x")
			if woff != goff || woff == "" {
				continue // not the same pc (a walk that parted earlier)
			}
			if strings.HasSuffix(wn, "@plt") {
				// PLT stubs have no aliases; perf 6.1 sometimes names
				// libc's __tunable_get_val slot "@plt" (objdump:
				// <__tunable_get_val@plt>), 1 frame in 5,000 of some runs.
				continue
			}
			compared++
			names[wn]++
			if wn != gn {
				if differ < 10 {
					t.Errorf("%s frame %d: sonde %s, perf %s", w.key, i, g.names[i], w.names[i])
				}
				differ++
			}
		}
	}
	t.Logf("%d libc frames compared, %d distinct names, %d differ", compared, len(names), differ)
	if compared < 200 || names["__libc_recv"] == 0 {
		t.Errorf("too few libc frames to compare (%d; __libc_recv %d): %v", compared, names["__libc_recv"], fmt.Sprint(names))
	}
}

func isLibc(mod string) bool { return strings.HasPrefix(filepath.Base(mod), "libc.so") }

// TestPerfChoiceSizesAndDemangledLength: perf sizes a zero-size symbol
// from the next entry of its table before choosing among aliases, and
// compares names demangled. libclang-cpp.so.14's .dynsym has
// Sema::SubstDecl (296 bytes, entry 4972) and, at its address, the label
// TemplateDeclInstantiator::VisitDecl (0 bytes, entry 19113): perf script
// names the frames VisitDecl (clang's recording in the seventh trial, 69
// samples); a zero-size alias followed by another at its address stays
// zero-size and loses.
func TestPerfChoiceSizesAndDemangledLength(t *testing.T) {
	subst := elfsym.Symbol{Name: "_ZN5clang4Sema9SubstDeclEPNS_4DeclEPNS_11DeclContextERKNS_30MultiLevelTemplateArgumentListE",
		Addr: 0x181db60, Size: 296, Kind: elfsym.KindFunc, Bind: elf.STB_GLOBAL, Origin: elfsym.OriginDynsym, Index: 4972}
	visit := elfsym.Symbol{Name: "_ZN5clang24TemplateDeclInstantiator9VisitDeclEPNS_4DeclE",
		Addr: 0x181db60, Kind: elfsym.KindFunc, Bind: elf.STB_GLOBAL, Origin: elfsym.OriginDynsym, Index: 19113}
	all := []elfsym.Symbol{subst, visit}
	for _, first := range all {
		if got := demangled(perfChoice(first, all).Name); got != "clang::TemplateDeclInstantiator::VisitDecl" {
			t.Errorf("from %s: %s, perf names VisitDecl", first.Name, got)
		}
	}
	// The label listed first: it ends where SubstDecl begins, size 0.
	visit.Index, subst.Index = 4972, 19113
	all = []elfsym.Symbol{visit, subst}
	if got := demangled(perfChoice(visit, all).Name); got != "clang::Sema::SubstDecl" {
		t.Errorf("zero-size alias before the sized one: %s, perf keeps the sized SubstDecl", got)
	}
}
