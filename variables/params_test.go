package variables

import (
	"debug/dwarf"
	"fmt"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/symbols"
)

// TestParamScopesMatchScopes: over libc's functions (blocks, inlined calls,
// abstract origins, call sites), the scopes ParamScopesAt decodes without
// locals hold the same scopes, parameters (name, type, location) and call
// sites as ScopesAt's full trees, and no local; a ScopesAt after a
// ParamScopesAt on the same Reader decodes the locals again.
func TestParamScopesMatchScopes(t *testing.T) {
	b, err := symbols.Open("/lib/x86_64-linux-gnu/libc.so.6", nil)
	if err != nil || !b.HasDWARF() {
		t.Skipf("no libc with DWARF (libc6-dbg, installed by scripts/setup): %v", err)
	}
	defer b.Close()
	full, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	params, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := New(b) // ParamScopesAt, then ScopesAt
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for i := range full.units {
		if len(pcs) >= 400 {
			break
		}
		full.mu.Lock()
		spans := full.unitFuncs(i)
		full.mu.Unlock()
		for _, s := range spans {
			pcs = append(pcs, s.lo+(s.hi-s.lo)/2)
		}
	}
	if len(pcs) < 50 {
		t.Skipf("only %d functions in libc's first units", len(pcs))
	}
	locals := 0
	for _, pc := range pcs {
		want, err1 := full.ScopesAt(pc)
		got, err2 := params.ParamScopesAt(pc)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("pc %#x: ScopesAt error %v, ParamScopesAt error %v", pc, err1, err2)
		}
		for _, s := range got {
			for _, v := range s.Vars {
				if !v.Param {
					t.Fatalf("pc %#x: ParamScopesAt decoded local %s", pc, v.Name)
				}
			}
		}
		if w, g := describeScopes(want), describeScopes(got); w != g {
			t.Fatalf("pc %#x: scopes differ\nScopesAt:\n%s\nParamScopesAt:\n%s", pc, w, g)
		}
		for _, s := range want {
			for _, v := range s.Vars {
				if !v.Param {
					locals++
				}
			}
		}
		mixed.ParamScopesAt(pc)
		again, _ := mixed.ScopesAt(pc)
		if w, g := describeScopes(want)+countVars(want), describeScopes(again)+countVars(again); w != g {
			t.Fatalf("pc %#x: ScopesAt after ParamScopesAt differs\nwant:\n%s\ngot:\n%s", pc, w, g)
		}
	}
	if locals == 0 {
		t.Fatalf("no locals in %d functions: the test tells nothing", len(pcs))
	}
	t.Logf("%d pcs, %d locals left out", len(pcs), locals)
}

// describeScopes prints scopes' kinds, names, ranges, parameters and call
// sites (locals are counted apart: countVars).
func describeScopes(scopes []*Scope) string {
	var sb strings.Builder
	for _, s := range scopes {
		fmt.Fprintf(&sb, "%d %s %#x %v\n", s.Kind, s.Name, s.Offset, s.Ranges)
		for _, v := range s.Vars {
			if v.Param {
				ty := "<nil>"
				if v.Type != nil {
					ty = v.Type.String()
				}
				fmt.Fprintf(&sb, "  param %s %#x %s %+v\n", v.Name, v.Offset, ty, v.Loc)
			}
		}
		fmt.Fprintf(&sb, "  %d call sites %+v\n", len(s.callSites), s.callSites)
	}
	return sb.String()
}

func countVars(scopes []*Scope) string {
	n := 0
	for _, s := range scopes {
		n += len(s.Vars)
	}
	return fmt.Sprint(n)
}

// BenchmarkParamScopes: the scopes of 400 pcs in libc's first units (one
// per function), decoded in full (ScopesAt) or with parameters only
// (ParamScopesAt), each iteration from empty function and type caches, as
// a first `sonde stack` decodes them.
func BenchmarkParamScopes(b *testing.B) {
	bin, err := symbols.Open("/lib/x86_64-linux-gnu/libc.so.6", nil)
	if err != nil || !bin.HasDWARF() {
		b.Skipf("no libc with DWARF (libc6-dbg): %v", err)
	}
	defer bin.Close()
	r, err := New(bin)
	if err != nil {
		b.Fatal(err)
	}
	var pcs []uint64
	for i := range r.units {
		if len(pcs) >= 400 {
			break
		}
		r.mu.Lock()
		for _, s := range r.unitFuncs(i) {
			pcs = append(pcs, s.lo+(s.hi-s.lo)/2)
		}
		r.mu.Unlock()
	}
	for _, mode := range []string{"full", "params"} {
		scopesAt := r.ScopesAt
		if mode == "params" {
			scopesAt = r.ParamScopesAt
		}
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				r.mu.Lock()
				r.funcs, r.types = map[dwarf.Offset]*Scope{}, map[dwarf.Offset]*Type{}
				r.mu.Unlock()
				for _, pc := range pcs {
					if _, err := scopesAt(pc); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
