package perfdata

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestLazySamplesDecodeAlike: a lazy Sorter hands out every record in the
// same order as an eager one, and DecodeSample on a lazy sample's body
// (after the Sorter moved on, its chunk retained) gives the eager decoding.
func TestLazySamplesDecodeAlike(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	path := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", path}, prog, "200")
	defer func(n int) { chunkSize = n }(chunkSize)
	chunkSize = 64 << 10 // records across chunk boundaries
	open := func() *Sorter {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		st, _ := f.Stat()
		r, err := Open(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		return NewSorter(r, 0)
	}
	eager, lazy := open(), open()
	lazy.SetLazySamples(true)
	type held struct {
		attr  *Attr
		body  []byte
		off   int64
		chunk *Chunk
		want  Sample
	}
	var queue []held // lazy samples decoded a few records later
	check := func(h held) {
		var got Sample
		if err := DecodeSample(h.attr, h.body, h.off, &got); err != nil {
			t.Fatalf("offset %#x: %v", h.off, err)
		}
		if h.chunk != nil {
			h.chunk.Release()
		}
		if !reflect.DeepEqual(got.Attr, h.want.Attr) {
			t.Fatalf("offset %#x: lazy event %+v, eager %+v", h.off, got.Attr, h.want.Attr)
		}
		got.Attr = h.want.Attr // the two readers' own copies, alike
		if len(got.Stack) == 0 && len(h.want.Stack) == 0 {
			got.Stack = h.want.Stack
		}
		if !reflect.DeepEqual(got, h.want) {
			t.Fatalf("offset %#x: lazy decoding %+v, eager %+v", h.off, got, h.want)
		}
	}
	samples := 0
	for {
		e, eerr := eager.Next()
		l, lerr := lazy.Next()
		if eerr == io.EOF || lerr == io.EOF {
			if eerr != lerr {
				t.Fatalf("eager ends with %v, lazy with %v", eerr, lerr)
			}
			break
		}
		if eerr != nil || lerr != nil {
			t.Fatalf("eager %v, lazy %v", eerr, lerr)
		}
		if e.Type != l.Type || e.Offset != l.Offset {
			t.Fatalf("eager record %d at %#x, lazy %d at %#x", e.Type, e.Offset, l.Type, l.Offset)
		}
		if e.Type != RecordSample {
			continue
		}
		if e.Lazy || !l.Lazy {
			t.Fatalf("offset %#x: Lazy %v eager, %v lazy", e.Offset, e.Lazy, l.Lazy)
		}
		s := l.Sample
		if !reflect.DeepEqual(s.Attr, e.Sample.Attr) || s.PID != e.Sample.PID || s.TID != e.Sample.TID || s.Time != e.Sample.Time {
			t.Fatalf("offset %#x: lazy ids %v %d/%d %d, eager %v %d/%d %d", l.Offset, s.Attr, s.PID, s.TID, s.Time, e.Sample.Attr, e.Sample.PID, e.Sample.TID, e.Sample.Time)
		}
		if len(s.Callchain) > 0 || s.Stack != nil {
			t.Fatalf("offset %#x: a lazy sample carries decoded fields", l.Offset)
		}
		want := e.Sample
		want.Callchain = append([]uint64(nil), want.Callchain...)
		want.Regs = append([]uint64(nil), want.Regs...)
		want.Stack = append([]byte(nil), want.Stack...)
		h := held{attr: s.Attr, off: l.Offset, want: want}
		if l.Chunk != nil {
			l.Chunk.Retain()
			h.chunk, h.body = l.Chunk, l.Body
		} else {
			h.body = append([]byte(nil), l.Body...)
		}
		queue = append(queue, h)
		if len(queue) > 8 {
			check(queue[0])
			queue = queue[1:]
		}
		samples++
	}
	for _, h := range queue {
		check(h)
	}
	if samples == 0 {
		t.Fatal("no samples")
	}
	t.Logf("%d samples decoded alike", samples)
}
