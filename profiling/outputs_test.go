package profiling

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestOutputsCountEverySample reads one recording into every output: each
// counts every sample, the inlined helper shows as its own frame with its
// line, and the pprof profile parses and carries names and lines.
func TestOutputsCountEverySample(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", out}, prog, "300")
	mixLine := sourceLine(t, "perf_spin.c", "return x * 2654435761u")
	rec, err := OpenRecording(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	folded, pp, report := NewFolded(), NewPprof(), NewReport()
	var script bytes.Buffer
	inlined := 0
	err = rec.Each(func(s *Sample) error {
		folded.Add(s)
		pp.Add(s)
		report.Add(s)
		for i, f := range s.Frames {
			if f.Function == "mix" && f.Inlined && i+1 < len(s.Frames) && s.Frames[i+1].Function == "leaf" {
				if !strings.HasSuffix(f.File, "perf_spin.c") || f.Line != mixLine {
					t.Fatalf("mix inlined at %s:%d, want perf_spin.c:%d", f.File, f.Line, mixLine)
				}
				inlined++
			}
		}
		return WriteScript(&script, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Samples == 0 || inlined == 0 {
		t.Fatalf("%d samples, %d with mix inlined into leaf", rec.Samples, inlined)
	}
	// Folded: the counts add up to the samples, each line "stack count".
	var buf bytes.Buffer
	if _, err := folded.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if i < 0 || err != nil || !strings.HasPrefix(line, "perf_spin;") {
			t.Fatalf("folded line %q", line)
		}
		sum += n
	}
	if sum != rec.Samples {
		t.Errorf("folded counts add up to %d, %d samples", sum, rec.Samples)
	}
	if !strings.Contains(buf.String(), ";main;middle;leaf;mix ") {
		t.Errorf("no main;middle;leaf;mix stack in\n%s", buf.String())
	}
	// pprof: parses, counts every sample, names and lines present.
	buf.Reset()
	if err := pp.Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
	}
	if uint64(total) != rec.Samples {
		t.Errorf("pprof counts %d samples, want %d", total, rec.Samples)
	}
	// pprof takes the first mapping for the program ("File:" of -top).
	if len(p.Mapping) == 0 || filepath.Base(p.Mapping[0].File) != filepath.Base(prog) {
		t.Errorf("pprof's mappings %v, want the program %s first", p.Mapping, prog)
	}
	// Each user location lies in its mapping, a range of its file as the
	// process mapped it (pprof reads the file at that address: its source
	// and disassembly views); clock samples are CPU time.
	for _, loc := range p.Location {
		if m := loc.Mapping; m != nil && strings.HasPrefix(m.File, "/") && (loc.Address < m.Start || loc.Address >= m.Limit) {
			t.Errorf("location %#x outside its mapping %#x-%#x of %s", loc.Address, m.Start, m.Limit, m.File)
		}
	}
	if st := p.SampleType[1]; st.Type != "cpu" || st.Unit != "nanoseconds" || p.PeriodType.Type != "cpu" || p.Period != 1e9/4000 || p.DurationNanos <= 0 {
		t.Errorf("pprof value %s/%s, period %d %s/%s, duration %d ns: want cpu/nanoseconds, 250000 per sample",
			st.Type, st.Unit, p.Period, p.PeriodType.Type, p.PeriodType.Unit, p.DurationNanos)
	}
	foundInline := false
	for _, loc := range p.Location {
		if len(loc.Line) >= 2 && loc.Line[0].Function.Name == "mix" && loc.Line[1].Function.Name == "leaf" && loc.Line[0].Line == int64(mixLine) {
			foundInline = true
		}
	}
	if !foundInline {
		t.Errorf("no pprof location with mix inlined into leaf")
	}
	// Report and script.
	buf.Reset()
	if err := report.WriteTo(&buf, 10); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), " mix\n") || !strings.Contains(buf.String(), "# Samples: "+strconv.FormatUint(rec.Samples, 10)) {
		t.Errorf("report:\n%s", buf.String())
	}
	if n := strings.Count(script.String(), " cpu-clock: \n"); uint64(n) != rec.Samples {
		t.Errorf("script prints %d samples, want %d", n, rec.Samples)
	}
}

// sourceLine is the 1-based line of testdata/name that contains text.
func sourceLine(t *testing.T, name, text string) int {
	b, err := os.ReadFile(testprog.Source(name))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", name, text)
	return 0
}
