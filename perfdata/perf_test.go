package perfdata

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// perfStatNames maps `perf report --stats` names to record types.
var perfStatNames = map[string]uint32{
	"MMAP": RecordMmap, "LOST": RecordLost, "COMM": RecordComm, "EXIT": RecordExit,
	"THROTTLE": RecordThrottle, "UNTHROTTLE": RecordUnthrottle, "FORK": RecordFork,
	"SAMPLE": RecordSample, "MMAP2": RecordMmap2, "LOST_SAMPLES": RecordLostSamples,
	"ATTR": RecordHeaderAttr, "BUILD_ID": RecordHeaderBuildID,
	"FINISHED_ROUND": RecordFinishedRound, "ID_INDEX": RecordIDIndex,
	"THREAD_MAP": RecordThreadMap, "CPU_MAP": RecordCPUMap, "EVENT_UPDATE": RecordEventUpdate,
	"TIME_CONV": RecordTimeConv, "FEATURE": RecordHeaderFeature, "COMPRESSED": RecordCompressed,
	"FINISHED_INIT": RecordFinishedInit,
}

var statLine = regexp.MustCompile(`^\s*([A-Z_0-9]+) events:\s+(\d+)`)

// perfStats runs `perf report --stats` and returns its aggregated counts by type.
func perfStats(t *testing.T, path string) map[uint32]int {
	out, err := exec.Command("perf", "report", "--stats", "-i", path).Output()
	if err != nil {
		t.Fatalf("perf report --stats: %v", err)
	}
	got := map[uint32]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() && !strings.Contains(sc.Text(), "Aggregated stats:") {
	}
	for sc.Scan() {
		if strings.Contains(sc.Text(), " stats:") { // per-event sections follow the totals
			break
		}
		m := statLine.FindStringSubmatch(sc.Text())
		if m == nil || m[1] == "TOTAL" {
			continue
		}
		typ, ok := perfStatNames[m[1]]
		if !ok {
			t.Fatalf("perf counts %s records, which this test cannot name", m[1])
		}
		got[typ], _ = strconv.Atoi(m[2])
	}
	return got
}

// countRecords reads every record of a recording and counts them by type,
// with the COMPRESSED blocks as perf counts them.
func countRecords(t *testing.T, path string) (map[uint32]int, *Reader) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	r, err := Open(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := readCounts(t, r)
	if r.CompressedBlocks > 0 {
		got[RecordCompressed] = r.CompressedBlocks
	}
	return got, r
}

// readCounts reads every record of r, checking each sample, and counts
// them by type.
func readCounts(t *testing.T, r *Reader) map[uint32]int {
	t.Helper()
	got := map[uint32]int{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[rec.Type]++
		if rec.Type == RecordSample {
			checkSample(t, rec)
		}
	}
	return got
}

// checkSample checks what every user-mode dwarf sample must hold.
func checkSample(t *testing.T, rec *Record) {
	s := &rec.Sample
	if rec.CPUMode() != MiscUser || s.RegsABI == 0 {
		return
	}
	ip, ok := s.Reg(RegIP)
	if !ok || ip != s.IP {
		t.Fatalf("sample at %#x: user ip register %#x (%v)", rec.Offset, ip, ok)
	}
	if _, ok := s.Reg(RegSP); !ok {
		t.Fatalf("sample at %#x: no user sp", rec.Offset)
	}
	if s.Attr.SampleStackUser != 0 && len(s.Stack) == 0 {
		t.Fatalf("sample at %#x: no stack copy", rec.Offset)
	}
}

func spin(t *testing.T) string {
	return testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
}

// TestRecordsMatchPerf reads recordings perf makes here, in each mode perf
// writes, and counts their records as `perf report --stats` does.
func TestRecordsMatchPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := spin(t)
	for _, tc := range []struct {
		name string
		opts []string
	}{
		{"dwarf", []string{"-F", "2000", "--call-graph", "dwarf"}},
		{"fp", []string{"-F", "2000", "--call-graph", "fp"}},
		{"zstd", []string{"-F", "2000", "--call-graph", "dwarf", "-z"}},
		{"two events", []string{"-F", "2000", "-e", "task-clock", "--call-graph", "dwarf,4096"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "perf.data")
			testprog.PerfRecord(t, append(tc.opts, "-o", out), prog, "200", "fork")
			want := perfStats(t, out)
			got, r := countRecords(t, out)
			for typ, n := range want {
				if got[typ] != n {
					t.Errorf("type %d: %d records, perf counts %d", typ, got[typ], n)
				}
			}
			for typ, n := range got {
				if _, ok := want[typ]; !ok {
					t.Errorf("type %d: %d records perf does not count", typ, n)
				}
			}
			if got[RecordFork] == 0 {
				t.Errorf("no FORK record from a program that forks")
			}
			checkBuildIDs(t, out, r)
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			sameAsInPlace(t, data)
		})
	}
}

// checkBuildIDs compares the build-id table with `perf buildid-list`.
func checkBuildIDs(t *testing.T, path string, r *Reader) {
	out, err := exec.Command("perf", "buildid-list", "-i", path).Output()
	if err != nil {
		t.Fatalf("perf buildid-list: %v", err)
	}
	var want, got []string
	// perf lists the files a recording without a build-id table (one made
	// with -z) touched, with blank build-ids: only its real entries count.
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if id, _, ok := strings.Cut(l, " "); ok && len(id) >= 2 && strings.Trim(id, "0123456789abcdef") == "" {
			want = append(want, l)
		}
	}
	for _, b := range r.BuildIDs {
		got = append(got, hex.EncodeToString(b.BuildID)+" "+b.Filename)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("build-ids:\n%s\nperf buildid-list:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPipeModeMatchesPerf reads `perf record -o -` output from a pipe.
func TestPipeModeMatchesPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := spin(t)
	out := filepath.Join(t.TempDir(), "pipe.data")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf", "-o", "-", "--", prog, "200")
	cmd.Stdout = f
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := perfStats(t, out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Through a plain io.Reader, as from a pipe.
	r, err := NewPipeReader(struct{ io.Reader }{bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	got := readCounts(t, r)
	for typ, n := range want {
		if got[typ] != n {
			t.Errorf("type %d: %d records, perf counts %d", typ, got[typ], n)
		}
	}
	if len(r.Attrs) != 1 || r.Attrs[0].SampleType&SampleStackUser == 0 {
		t.Fatalf("attrs from the pipe: %+v", r.Attrs)
	}
	if r.Arch != "x86_64" || len(r.Cmdline) == 0 {
		t.Errorf("features from the pipe: arch %q cmdline %q", r.Arch, r.Cmdline)
	}
	// Open on the same bytes takes the pipe path too.
	r2, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil || !r2.Pipe {
		t.Fatalf("Open of a pipe-mode file: %v, pipe %v", err, r2 != nil && r2.Pipe)
	}
	sameAsInPlace(t, data)
}

// sameAsInPlace reads a recording through Open (in chunks, small ones so
// that records straddle them) and through OpenBytes, each behind a Sorter,
// and checks both hand out the same records in the same order, in place.
// It keeps every sample's stack from the chunked reader by retaining its
// chunk, and checks at the end that none was overwritten.
func sameAsInPlace(t *testing.T, data []byte) {
	t.Helper()
	// Every chunk read when it is needed, then one, three and four (the
	// default) reads ahead.
	for _, ahead := range []int{0, 1, 3, 4} {
		sameAsInPlaceAhead(t, data, ahead)
	}
}

func sameAsInPlaceAhead(t *testing.T, data []byte, ahead int) {
	t.Helper()
	defer func(n, a int) { chunkSize, readAhead = n, a }(chunkSize, readAhead)
	chunkSize, readAhead = 64<<10, ahead
	r1, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := OpenBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	s1, s2 := NewSorter(r1, 1<<20), NewSorter(r2, 1<<20)
	type kept struct {
		stack, want []byte
		chunk       *Chunk
	}
	var keep []kept
	for n := 0; ; n++ {
		a, err1 := s1.Next()
		b, err2 := s2.Next()
		if err1 != nil || err2 != nil {
			if err1 != io.EOF || err2 != io.EOF {
				t.Fatalf("record %d: Open: %v, OpenBytes: %v", n, err1, err2)
			}
			break
		}
		// Pipe-mode input streams through Open (no chunks); a
		// decompressed record is nowhere in the input.
		chunked := !r1.Pipe && r2.CompressedBlocks == 0
		if chunked && (!a.InPlace || a.Chunk == nil || !b.InPlace || b.Chunk != nil) {
			t.Fatalf("record %d at %#x: Open's in place %v (chunk %v), OpenBytes' %v (chunk %v)", n, a.Offset, a.InPlace, a.Chunk != nil, b.InPlace, b.Chunk != nil)
		}
		if a.Type != b.Type || a.Offset != b.Offset || !bytes.Equal(a.Body, b.Body) ||
			a.Sample.Time != b.Sample.Time || !bytes.Equal(a.Sample.Stack, b.Sample.Stack) || a.Mmap.Filename != b.Mmap.Filename {
			t.Fatalf("record %d: Open gives type %d at %#x, OpenBytes type %d at %#x", n, a.Type, a.Offset, b.Type, b.Offset)
		}
		if a.Type == RecordSample && a.Chunk != nil && n%7 == 0 {
			a.Chunk.Retain()
			keep = append(keep, kept{a.Sample.Stack, b.Sample.Stack, a.Chunk})
		}
	}
	for i, k := range keep {
		if !bytes.Equal(k.stack, k.want) {
			t.Fatalf("kept stack %d changed after its chunk was retained", i)
		}
		k.chunk.Release()
	}
}
