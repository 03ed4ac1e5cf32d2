package profiling

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestPprofStartLinesMatchGdb writes the pprof profile of a recording,
// reads it back with the pprof package and checks every line of every
// location in the program against gdb: the function's start line
// (Function.start_line, DW_AT_decl_line) is the line gdb gives the
// function of the block at that pc, inlined functions' blocks included
// (gdb's Python block.function.line). Mapping flags say what the locations
// carry: the program has functions, files, lines and inline frames; with
// --no-inline only functions.
func TestPprofStartLinesMatchGdb(t *testing.T) {
	testprog.RequirePerf(t)
	gdbtest.Need(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "200")
	p := pprofOf(t, out, Options{})

	var m *profile.Mapping
	for _, mm := range p.Mapping {
		if mm.File == prog {
			m = mm
		}
	}
	if m == nil {
		t.Fatalf("no mapping of %s in %v", prog, p.Mapping)
	}
	if !m.HasFunctions || !m.HasFilenames || !m.HasLineNumbers || !m.HasInlineFrames {
		t.Errorf("program mapping flags %+v, want all four set", m)
	}
	// The sampled pc (the first user location) is looked up where it is,
	// callers at pc-1 (inside the call), as sonde names them; a location
	// that is both is skipped.
	leaf, caller := map[*profile.Location]bool{}, map[*profile.Location]bool{}
	for _, s := range p.Sample {
		user := 0
		for _, l := range s.Location {
			if l.Mapping != nil && strings.HasPrefix(l.Mapping.File, "[kernel") {
				continue
			}
			if user == 0 {
				leaf[l] = true
			} else {
				caller[l] = true
			}
			user++
		}
	}
	var locs []*profile.Location
	var pcs []uint64
	for _, l := range p.Location {
		if l.Mapping != m || leaf[l] == caller[l] {
			continue
		}
		pc := l.Address - m.Start + m.Offset // the file's address (PIE: vaddr = offset)
		if caller[l] {
			pc--
		}
		locs, pcs = append(locs, l), append(pcs, pc)
	}
	want := gdbBlockLines(t, prog, pcs)
	compared, inlined, cols := 0, 0, 0
	decl := declLines(t, prog)
	for i, l := range locs {
		w := want[pcs[i]]
		if len(w) == 0 && l.Line[0].Function.Filename == "" {
			continue // no DWARF here (crt's _start): an ELF symbol, no start line
		}
		// gdb gives an inlined function's block the line of its call
		// (DW_AT_call_line); its definition's line is its abstract
		// origin's DW_AT_decl_line, which readelf shows.
		for j := 0; j+1 < len(w); j++ {
			name, _, _ := strings.Cut(w[j], ":")
			w[j] = name + ":" + strconv.Itoa(decl[name])
		}
		if len(w) != len(l.Line) {
			t.Errorf("%#x: sonde's chain %v, gdb's %v", pcs[i], lineNames(l.Line), w)
			continue
		}
		for j, ln := range l.Line {
			name, line, _ := strings.Cut(w[j], ":")
			if ln.Function.Name != name || strconv.FormatInt(ln.Function.StartLine, 10) != line {
				t.Errorf("%#x frame %d: sonde %s starts at %d, gdb %s", pcs[i], j, ln.Function.Name, ln.Function.StartLine, w[j])
			}
			compared++
			if j+1 < len(l.Line) {
				inlined++
			}
			if ln.Column > 0 {
				cols++
			}
		}
	}
	t.Logf("%d frames of %d locations compared with gdb, %d inlined, %d with a column", compared, len(locs), inlined, cols)
	if compared < 5 || inlined == 0 || cols == 0 {
		t.Errorf("too little to compare: %d frames, %d inlined, %d with a column", compared, inlined, cols)
	}

	// --no-inline: ELF symbols, no files or lines.
	p = pprofOf(t, out, Options{NoInline: true})
	for _, mm := range p.Mapping {
		if mm.File == prog && (!mm.HasFunctions || mm.HasFilenames || mm.HasLineNumbers || mm.HasInlineFrames) {
			t.Errorf("--no-inline program mapping flags %+v, want functions only", mm)
		}
	}
}

// pprofOf reads a recording into a pprof profile and parses it back.
func pprofOf(t *testing.T, path string, opts Options) *profile.Profile {
	t.Helper()
	rec, err := OpenRecording(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	pp := NewPprof()
	if err := rec.Each(func(s *Sample) error { pp.Add(s); return nil }); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pp.Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func lineNames(lines []profile.Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, fmt.Sprintf("%s:%d", l.Function.Name, l.Function.StartLine))
	}
	return out
}

// gdbBlockLines asks gdb, for each file address, the functions of the
// blocks holding it, innermost first, as "name:line" (line is where gdb
// says the function is defined).
func gdbBlockLines(t *testing.T, prog string, pcs []uint64) map[uint64][]string {
	t.Helper()
	var script strings.Builder
	script.WriteString("import gdb\nfor pc in [")
	for _, pc := range pcs {
		fmt.Fprintf(&script, "%d,", pc)
	}
	script.WriteString(`]:
    b = gdb.block_for_pc(pc)
    out = []
    while b is not None:
        if b.function is not None:
            out.append("%s:%d" % (b.function.name, b.function.line))
        b = b.superblock
    print("PC %d %s" % (pc, " ".join(out)))
`)
	b := []byte(gdbtest.Batch(t, "-ex", "source "+gdbtest.Script(t, "blocks.py", script.String()), prog))
	got := map[uint64][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "PC" {
			continue
		}
		pc, _ := strconv.ParseUint(f[1], 10, 64)
		got[pc] = f[2:]
	}
	if len(got) != len(pcs) {
		t.Fatalf("gdb answered %d of %d pcs:\n%s", len(got), len(pcs), b)
	}
	return got
}

// declLines reads DW_AT_decl_line of every named subprogram DIE with
// readelf (the abstract instances of inlined functions included).
func declLines(t *testing.T, prog string) map[string]int {
	t.Helper()
	b, err := exec.Command("readelf", "--debug-dump=info", "-W", prog).Output()
	if err != nil {
		t.Fatalf("readelf: %v", err)
	}
	out := map[string]int{}
	in, name := false, ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "Abbrev Number"):
			in, name = strings.Contains(line, "(DW_TAG_subprogram)"), ""
		case in && strings.Contains(line, "DW_AT_name"):
			f := strings.Fields(line)
			name = f[len(f)-1]
		case in && strings.Contains(line, "DW_AT_decl_line"):
			f := strings.Fields(line)
			if n, err := strconv.Atoi(f[len(f)-1]); err == nil && name != "" {
				out[name] = n
			}
		}
	}
	return out
}
