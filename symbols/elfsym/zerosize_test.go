package elfsym

import (
	"debug/elf"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// TestZeroSizeSymbolsMatchGDB: addresses after a zero-size symbol
// (crtstuff's register_tm_clones and frame_dummy, assembly labels, the
// static libc's hand-written entry points) get the name gdb's `info symbol`
// gives, and addresses gdb leaves unnamed stay unnamed.
func TestZeroSizeSymbolsMatchGDB(t *testing.T) {
	needTool(t, "gdb")
	for _, v := range []string{"lazy", "static"} {
		flags := []string{"-O1"}
		if v == "static" {
			flags = append(flags, "-static")
		}
		bin := buildPLT(t, v, flags)
		tab := openTable(t, bin)
		probes := zeroSizeProbes(t, bin, 150)
		want := gdbInfoSymbol(t, bin, probes)
		named, unnamed := 0, 0
		for i, a := range probes {
			s, off, ok := tab.Lookup(a)
			got := ""
			if ok {
				got = fmt.Sprintf("%s+%d", s.Name, off)
			}
			w := want[i]
			if w == "" {
				unnamed++
			} else {
				named++
			}
			if got == w {
				continue
			}
			// gdb picks among aliases by its own preference: accept any
			// alias at the same address and offset.
			if ok && w != "" && aliasOf(tab, s.Addr, w, off) {
				continue
			}
			t.Errorf("%s: %#x: Lookup %q, gdb %q", v, a, got, w)
		}
		t.Logf("%s: %d probes, %d named by gdb, %d unnamed", v, len(probes), named, unnamed)
		if named == 0 {
			t.Errorf("%s: no zero-size symbol probed: the comparison is vacuous", v)
		}
	}
}

// zeroSizeProbes returns, for zero-size FUNC and NOTYPE symbols of .text,
// the address after each (when no other symbol starts there), and the
// first address after each sized function (gaps), up to max of each.
func zeroSizeProbes(t *testing.T, bin string, max int) []uint64 {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section(".text")
	starts := map[uint64]bool{}
	for _, s := range syms {
		starts[s.Value] = true
	}
	var zero, gaps []uint64
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if s.Value < text.Addr || s.Value+1 >= text.Addr+text.Size || (typ != elf.STT_FUNC && typ != elf.STT_NOTYPE) {
			continue
		}
		if s.Size == 0 && !starts[s.Value+1] && len(zero) < max {
			zero = append(zero, s.Value+1)
		}
		if s.Size > 0 && !starts[s.Value+s.Size] && s.Value+s.Size < text.Addr+text.Size && len(gaps) < max {
			gaps = append(gaps, s.Value+s.Size)
		}
	}
	return append(zero, gaps...)
}

var infoSymbolRE = regexp.MustCompile(`^(\S+)(?: \+ (\d+))? in section`)

// gdbInfoSymbol returns gdb's `info symbol` name+offset for each address
// ("" for "No symbol matches").
func gdbInfoSymbol(t *testing.T, bin string, addrs []uint64) []string {
	t.Helper()
	res := gdbtest.InfoSymbols(t, bin, addrs)
	for i, line := range res {
		res[i] = ""
		if m := infoSymbolRE.FindStringSubmatch(line); m != nil {
			off := uint64(0)
			if m[2] != "" {
				off, _ = strconv.ParseUint(m[2], 10, 64)
			}
			res[i] = fmt.Sprintf("%s+%d", m[1], off)
		}
	}
	return res
}

func aliasOf(tab *Table, addr uint64, want string, off uint64) bool {
	for _, a := range tab.Aliases(addr) {
		if fmt.Sprintf("%s+%d", a.Name, off) == want {
			return true
		}
	}
	return false
}
