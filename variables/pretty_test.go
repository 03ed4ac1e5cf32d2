package variables_test

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// ppLocals are pp_cxx's containers, printed by gdb with libstdc++'s
// pretty-printers (auto-loaded with libstdc++).
var ppLocals = []string{"m", "mp", "m_empty", "s", "ms", "um", "us", "l", "l_empty", "dq", "up", "up_pt", "up_null",
	"sp", "sp2", "wp", "sp_null", "opt", "opt_none", "sv", "arr", "pr", "tp", "v", "vb", "m_it", "v_it", "m_none", "fl", "fl_empty", "st", "q"}

// TestContainersMatchGDB prints pp_cxx's libstdc++ containers and smart
// pointers with Format's Pretty option and compares each with gdb's print
// (libstdc++'s printers), at the same stop (gdb's core).
func TestContainersMatchGDB(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"pp_cxx.cc"}, Flags: []string{"-O0", "-std=c++17"}, Name: "pp_cxx"})
	stop := vartest.GDBStop(t, exe, "stop_here", map[int][]string{1: ppLocals})
	if stop.Results[1]["m"].Value == "" || stop.Results[1]["m"].Value[0] == '{' {
		t.Skipf("gdb has no libstdc++ printers (m = %q)", stop.Results[1]["m"].Value)
	}
	f, r := stop.Frame(t, 1)
	for _, name := range ppLocals {
		v := findVar(t, r, f, name)
		if v == nil {
			t.Errorf("%s: not found", name)
			continue
		}
		val, err := r.Read(v, f)
		got := r.Format(val, err, f, variables.FormatOptions{Pretty: true})
		if want := stop.Results[1][name].Value; got != want {
			t.Errorf("%s:\nsonde %s\ngdb   %s", name, got, want)
		}
	}
	// The children a debugger front end lists: a map's keys and values, a
	// deque's elements from the middle.
	c := container(t, r, f, "mp")
	kids, err := c.Children(1, 5)
	if err != nil || len(kids) != 1 || kids[0].Key == nil || r.Format(*kids[0].Key, nil, f, variables.FormatOptions{Pretty: true}) != `"b"` ||
		r.Format(kids[0].Value, nil, f, variables.FormatOptions{}) != "{x = 3, y = 4}" {
		t.Errorf("mp children from 1: %+v, %v", kids, err)
	}
	c = container(t, r, f, "dq")
	kids, err = c.Children(120, 100)
	if err != nil || c.Count != 129 || len(kids) != 9 || kids[8].Name != "[128]" || r.Format(kids[8].Value, nil, f, variables.FormatOptions{}) != "129" {
		t.Errorf("dq children from 120: %d, %v", len(kids), err)
	}
	if c := container(t, r, f, "arr"); c.Count != 4 || c.GDB {
		t.Errorf("std::array: %+v", c)
	}
}

func container(t *testing.T, r *variables.Reader, f variables.Frame, name string) *variables.Container {
	t.Helper()
	v := findVar(t, r, f, name)
	val, err := r.Read(v, f)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := r.Container(val, f)
	if !ok {
		t.Fatalf("%s is not a container", name)
	}
	return c
}

// TestContainersCorrupt overwrites the containers' words with garbage (as
// a container not constructed yet holds) and reads them again: every walk
// ends, bounded, with an error or a short list, never a hang or a huge
// allocation.
func TestContainersCorrupt(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"pp_cxx.cc"}, Flags: []string{"-O0", "-std=c++17"}, Name: "pp_cxx"})
	stop := vartest.GDBStop(t, exe, "stop_here", map[int][]string{1: {"m"}})
	f, r := stop.Frame(t, 1)
	rng := rand.New(rand.NewSource(1))
	words := []uint64{0, 1, 1 << 40, 0xffffffffffffffff}
	for _, name := range ppLocals {
		v := findVar(t, r, f, name)
		val, err := r.Read(v, f)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			b := append([]byte(nil), val.Bytes...)
			for j := 0; j+8 <= len(b); j += 8 {
				if rng.Intn(3) == 0 {
					w := words[rng.Intn(len(words))]
					if rng.Intn(2) == 0 {
						// A pointer into the container itself: cycles.
						w = val.Address + uint64(rng.Intn(len(b)))
					}
					for k := 0; k < 8; k++ {
						b[j+k] = byte(w >> (8 * k))
					}
				}
			}
			bad := val
			bad.Bytes = b
			c, ok := r.Container(bad, f)
			if ok {
				kids, err := c.Children(0, 1<<20)
				if len(kids) > variables.MaxContainerElements || err == nil && len(kids) != min(c.Count, variables.MaxContainerElements) {
					t.Errorf("%s: %d children of %d (%v)", name, len(kids), c.Count, err)
				}
				if err != nil && !errors.Is(err, variables.ErrBadContainer) {
					var me *variables.MemoryError
					if !errors.As(err, &me) {
						t.Errorf("%s: %v", name, err)
					}
				}
			}
			r.Format(bad, nil, f, variables.FormatOptions{Pretty: true})
		}
	}
}
