package profiling

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/perfdata"
)

// TestEachStopsAtMalformedSample: a sample whose fields run past its record
// (decoded by a worker, not the reading goroutine) ends Each with the
// reader's error naming its offset, after the samples before it in time
// order, as when the reading goroutine decoded every sample.
func TestEachStopsAtMalformedSample(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	good := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", good}, prog, "300")
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// The 200th sample's callchain count (or the middle one's, when a
	// loaded machine gave the program less CPU), made larger than its record.
	r, err := perfdata.OpenBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	samples := 0
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		if rec.Type == perfdata.RecordSample {
			samples++
		}
	}
	if samples < 20 {
		t.Skipf("SKIP (machine): %d samples in a 300 ms recording", samples)
	}
	nth := min(200, samples/2)
	if r, err = perfdata.OpenBytes(data); err != nil {
		t.Fatal(err)
	}
	var bad int64 = -1
	for n := 0; bad < 0; {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("no sample %d: %v", nth, err)
		}
		if rec.Type != perfdata.RecordSample {
			continue
		}
		if n++; n < nth {
			continue
		}
		st := rec.Sample.Attr.SampleType
		if st&perfdata.SampleCallchain == 0 || st&perfdata.SampleRead != 0 {
			t.Skipf("sample_type %#x: no callchain where this test looks for it", st)
		}
		before := st & (perfdata.SampleIdentifier | perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime |
			perfdata.SampleAddr | perfdata.SampleID | perfdata.SampleStreamID | perfdata.SampleCPU | perfdata.SamplePeriod)
		at := rec.Offset + 8 + 8*int64(bits.OnesCount64(before))
		binary.LittleEndian.PutUint64(data[at:], 1<<40)
		bad = rec.Offset
	}
	path := filepath.Join(t.TempDir(), "bad.data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// What the reading goroutine's own decoding finds: the samples before
	// the bad one in time order.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	r, err = perfdata.Open(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	sorter := perfdata.NewSorter(r, 0)
	want := 0
	var wantErr error
	for {
		rec, err := sorter.Next()
		if err != nil {
			wantErr = err
			break
		}
		if rec.Type == perfdata.RecordSample {
			want++
		}
	}
	var fe *perfdata.FormatError
	if !errors.As(wantErr, &fe) || fe.Offset != bad {
		t.Fatalf("the eager reader ends with %v, want a format error at %#x", wantErr, bad)
	}
	rec, err := OpenRecording(path, Options{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	got := 0
	err = rec.Each(func(*Sample) error { got++; return nil })
	if err == nil || err.Error() != wantErr.Error() {
		t.Fatalf("Each returned %v, want %v", err, wantErr)
	}
	if got != want {
		t.Fatalf("Each gave %d samples before the bad one, want %d", got, want)
	}
	t.Logf("%d samples, then %v", got, err)
}

// TestEachReleasesChunks: the workers release every input chunk a batch
// retained (once per batch and chunk, not per sample), so after Each only
// the reader's and the Sorter's last chunks are still held, however many
// chunks the recording spanned.
func TestEachReleasesChunks(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	path := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", path}, prog, "500")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 2<<20 { // four chunks
		t.Skipf("SKIP (machine): a %d-byte recording spans too few chunks", st.Size())
	}
	rec, err := OpenRecording(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if err := rec.Each(func(*Sample) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if held := rec.reader.ChunksHeld(); held > 2 {
		t.Fatalf("%d chunks still held after Each over %d samples (%d bytes), want at most 2", held, rec.Samples, st.Size())
	}
	t.Logf("%d samples, %d bytes: %d chunks held at the end", rec.Samples, st.Size(), rec.reader.ChunksHeld())
}
