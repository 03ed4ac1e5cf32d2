package symbols

import (
	"testing"

	"github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestCallSites reads the call sites of testdata/uw_tail.c built -O2 in
// DWARF 5 (DW_TAG_call_site) and DWARF 4 (GCC's DW_TAG_GNU_call_site) and
// checks them against the code: each tail_ function ends in a tail call to
// the next, caller calls tail_a and tail_pick, leaf_block calls pause (a
// declaration: named, not addressed), and the arguments' values are there.
func TestCallSites(t *testing.T) {
	for _, dw := range []string{"-gdwarf-5", "-gdwarf-4"} {
		t.Run(dw, func(t *testing.T) {
			path := testprog.Build(t, testprog.Spec{Sources: []string{"uw_tail.c"}, Flags: []string{"-O2", dw}, Name: "uw_tail" + dw})
			syms := elfSymbols(t, path)
			b, err := Open(path, &Options{NoSearch: true})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			tails := func(fn string) []CallSite {
				t.Helper()
				sites, ok, err := b.TailCallSites(syms[fn])
				if err != nil || !ok {
					t.Fatalf("TailCallSites(%s): ok %v, %v", fn, ok, err)
				}
				return sites
			}
			for fn, want := range map[string][]string{"tail_a": {"tail_b"}, "tail_b": {"leaf_block"}, "tail_c": {"leaf_block"}, "tail_pick": {"tail_b", "tail_c"}, "leaf_block": nil} {
				sites := tails(fn)
				got := map[string]bool{}
				for _, s := range sites {
					if !s.Tail || s.Func != syms[fn] || s.Target.Kind != TargetAddress {
						t.Errorf("%s: %v", fn, s)
					}
					for name, addr := range syms {
						if addr == s.Target.Addr {
							got[name] = true
						}
					}
					// The site is found again by its return address.
					if at, ok, err := b.CallSiteAt(s.ReturnPC); !ok || err != nil || at.Offset != s.Offset {
						t.Errorf("CallSiteAt(%#x) = %v %v %v, want %v", s.ReturnPC, at, ok, err, s)
					}
				}
				if len(got) != len(want) || len(sites) != len(want) {
					t.Errorf("%s: tail calls %v (%v), want %v", fn, got, sites, want)
				}
				for _, w := range want {
					if !got[w] {
						t.Errorf("%s: no tail call to %s: %v", fn, w, sites)
					}
				}
			}
			if _, ok, _ := b.TailCallSites(syms["tail_a"] + 1); ok {
				t.Error("TailCallSites found a function starting inside tail_a")
			}
			// leaf_block's call of pause, a function of another file.
			var pause *CallSite
			for pc := syms["leaf_block"]; pc < syms["leaf_block"]+64; pc++ {
				if s, ok, _ := b.CallSiteAt(pc); ok {
					pause = &s
					break
				}
			}
			if pause == nil || pause.Tail || pause.Target.Kind != TargetName || pause.Target.Name != "pause" || pause.Func != syms["leaf_block"] {
				t.Fatalf("call of pause in leaf_block: %v", pause)
			}
			// The argument of the tail call tail_a => tail_b: n+1 in %edi.
			s := tails("tail_a")[0]
			if len(s.Params) != 1 || len(s.Params[0].Location) != 1 || s.Params[0].Location[0] != 0x55 /* DW_OP_reg5 (rdi) */ || len(s.Params[0].Value) == 0 {
				t.Errorf("tail_a's call site parameters: %+v", s.Params)
			}
		})
	}
}

// FuzzCallSites feeds damaged .debug_info to the call-site reader, with
// the other sections of a real -O2 build: no panic, no hang, no allocation
// by an untrusted count.
func FuzzCallSites(f *testing.F) {
	path, err := testprog.BuildE(testprog.Spec{Sources: []string{"uw_tail.c"}, Flags: []string{"-O2", "-gdwarf-5"}, Name: "fuzz_callsite"})
	if err != nil {
		f.Fatal(err)
	}
	b, err := Open(path, &Options{NoSearch: true})
	if err != nil {
		f.Fatal(err)
	}
	defer b.Close()
	sec, err := loadDWARFSections(b.dw.ef, false)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sec.info)
	f.Add(sec.info[:len(sec.info)/2])
	f.Fuzz(func(t *testing.T, info []byte) {
		d := &dwarfFile{name: "fuzz", ef: b.dw.ef, eager: true, sec: sec,
			abbrevs: map[uint64]*dwarf.AbbrevTable{}, decls: map[uint64]*fnName{}}
		d.sec.info = info
		units, _ := dwarf.ReadUnits(".debug_info", info, false)
		for i := range units {
			cu := &compUnit{file: d, hdr: units[i]}
			d.units = append(d.units, cu)
		}
		d.indexOnce.Do(func() {}) // units are set; no address index is needed
		for _, cu := range d.units {
			cs := cu.readCallSites()
			for _, s := range cs.sites {
				if s.ReturnPC == 0 {
					t.Fatalf("call site without a return address: %v", s)
				}
				_ = s.String()
			}
		}
	})
}
