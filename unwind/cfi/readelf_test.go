package cfi

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// readelfRegs maps readelf's x86-64 column names to DWARF numbers.
var readelfRegs = map[string]int{
	"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
	"r8": 8, "r9": 9, "r10": 10, "r11": 11, "r12": 12, "r13": 13, "r14": 14, "r15": 15, "ra": 16,
}

// tablesOf opens the CFI sections of an ELF file the way the unwinder will.
func tablesOf(t testing.TB, path string) (eh, debug *Table) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s := f.Section(".eh_frame"); s != nil {
		data, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Addr: s.Addr}
		if h := f.Section(".eh_frame_hdr"); h != nil {
			opts.Hdr, _ = h.Data()
			opts.HdrAddr = h.Addr
		}
		eh = NewEHFrame(data, opts)
	}
	if s := f.Section(".debug_frame"); s != nil {
		data, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		debug = NewDebugFrame(data, Options{})
	}
	return eh, debug
}

// checkAgainstReadelf compares every row `readelf --debug-dump=frames-interp`
// prints for path with the row this package computes at the same location.
func checkAgainstReadelf(t *testing.T, path string) (rows int) {
	t.Helper()
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skip("readelf not installed")
	}
	// readelf exits 1 on harmless warnings (e.g. an absent separate debug
	// file); only an empty dump is a failure.
	out, err := exec.Command("readelf", "-wF", path).Output()
	if len(out) == 0 {
		t.Fatalf("readelf: %v", err)
	}
	eh, debug := tablesOf(t, path)
	var table *Table
	var cols []string
	var fdeOff uint64
	inFDE := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	fails := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Contents of the .eh_frame"):
			table = eh
		case strings.HasPrefix(line, "Contents of the .debug_frame"):
			table = debug
		case strings.Contains(line, " FDE cie="):
			inFDE = true
			fdeOff, _ = strconv.ParseUint(strings.Fields(line)[0], 16, 64)
		case strings.Contains(line, " CIE "), line == "":
			inFDE = false
		case strings.HasPrefix(line, "   LOC"):
			cols = strings.Fields(line)[2:]
		case inFDE && table != nil:
			fields := strings.Fields(line)
			if len(fields) != len(cols)+2 {
				continue
			}
			loc, err := strconv.ParseUint(fields[0], 16, 64)
			if err != nil {
				continue
			}
			var row Row
			if err := table.RowFor(loc, &row); err != nil {
				t.Errorf("%s: FDE %#x loc %#x: %v", table.Section(), fdeOff, loc, err)
				fails++
				break
			}
			if row.FDEOffset != fdeOff {
				// Overlapping FDEs: readelf lists them all, lookups find one.
				continue
			}
			rows++
			if got, want := cfaString(row.CFA), fields[1]; got != want {
				t.Errorf("%s: FDE %#x loc %#x: CFA %s, readelf %s", table.Section(), fdeOff, loc, got, want)
				fails++
			}
			for i, c := range cols {
				reg, ok := readelfRegs[c]
				if !ok {
					continue
				}
				if got, want := ruleString(row.Regs[reg]), fields[2+i]; got != want {
					t.Errorf("%s: FDE %#x loc %#x: %s is %s, readelf %s", table.Section(), fdeOff, loc, c, got, want)
					fails++
				}
			}
		}
		if fails > 20 {
			t.Fatal("too many differences")
		}
	}
	return rows
}

func regName(n uint16) string {
	for k, v := range readelfRegs {
		if v == int(n) && k != "ra" {
			return k
		}
	}
	return fmt.Sprintf("r%d", n)
}

func cfaString(r Rule) string {
	if r.Kind == RuleCFAExpression {
		return "exp"
	}
	return fmt.Sprintf("%s%+d", regName(r.Reg), r.Offset)
}

func ruleString(r Rule) string {
	switch r.Kind {
	case RuleUnspecified, RuleUndefined:
		return "u"
	case RuleSameValue:
		return "s"
	case RuleOffset:
		return fmt.Sprintf("c%+d", r.Offset)
	case RuleValOffset:
		return fmt.Sprintf("v%+d", r.Offset)
	case RuleRegister:
		return regName(r.Reg)
	case RuleExpression:
		return "exp"
	case RuleValExpression:
		return "vexp"
	}
	return "?"
}

// TestRowsMatchReadelfDebugFrame covers .debug_frame with CIE versions 1, 3
// and 4 (gas writes the version it is told to).
func TestRowsMatchReadelfDebugFrame(t *testing.T) {
	for _, v := range []string{"1", "3", "4"} {
		path := testprog.Build(t, testprog.Spec{Sources: []string{"uw_main.c"}, Name: "uw_main_cie" + v,
			Flags: []string{"-O2", "-DNO_ASM", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-Wa,--gdwarf-cie-version=" + v}})
		_, debug := tablesOf(t, path)
		if debug == nil {
			t.Fatalf("%s: no .debug_frame", path)
		}
		var versions []uint8
		debug.ForEachFDE(func(f FDE) error {
			versions = append(versions, f.CIE.Version)
			return nil
		})
		if len(versions) == 0 || fmt.Sprint(versions[0]) != v {
			t.Errorf("CIE version %v, want %s", versions, v)
		}
		if n := checkAgainstReadelf(t, path); n < 20 {
			t.Errorf("CIE version %s: only %d rows compared", v, n)
		}
	}
}

func TestRowsMatchReadelfSystemLibraries(t *testing.T) {
	for _, lib := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libgcc_s.so.1", "/lib/x86_64-linux-gnu/libm.so.6"} {
		n := checkAgainstReadelf(t, lib)
		t.Logf("%s: %d rows compared", lib, n)
		if n < 100 {
			t.Errorf("%s: only %d rows compared", lib, n)
		}
	}
}

// BenchmarkRowLookup is the uncached cost of one row: binary search of the
// .eh_frame_hdr table, FDE and CIE parse, and running the instructions.
func BenchmarkRowLookup(b *testing.B) {
	eh, _ := tablesOf(b, "/lib/x86_64-linux-gnu/libc.so.6")
	var pcs []uint64
	eh.ForEachFDE(func(f FDE) error {
		pcs = append(pcs, f.PCBegin+(f.PCEnd-f.PCBegin)/2)
		return nil
	})
	var row Row
	i := 0
	for b.Loop() {
		if err := eh.RowFor(pcs[i%len(pcs)], &row); err != nil {
			b.Fatal(err)
		}
		i += 7919
	}
}

// BenchmarkRowLookupNoHdr is the same without .eh_frame_hdr (sorted index).
func BenchmarkRowLookupNoHdr(b *testing.B) {
	eh, _ := tablesOf(b, "/lib/x86_64-linux-gnu/libc.so.6")
	t := NewEHFrame(eh.data, Options{Addr: eh.addr})
	var pcs []uint64
	t.ForEachFDE(func(f FDE) error {
		pcs = append(pcs, f.PCBegin+(f.PCEnd-f.PCBegin)/2)
		return nil
	})
	var row Row
	i := 0
	for b.Loop() {
		if err := t.RowFor(pcs[i%len(pcs)], &row); err != nil {
			b.Fatal(err)
		}
		i += 7919
	}
}
