package perfdata

import (
	"bytes"
	"io"
	"testing"
)

// readAll reads every record, bounded so a fuzz input cannot run long.
func readAll(r *Reader) {
	defer r.Close()
	for i := 0; i < 100000; i++ {
		rec, err := r.Next()
		if err != nil {
			return
		}
		if rec.Type == RecordSample {
			rec.Sample.Reg(RegIP)
		}
	}
}

// FuzzOpen feeds arbitrary bytes to the file-mode reader (which takes the
// pipe path when the header says so).
func FuzzOpen(f *testing.F) {
	f.Add(sampleFile())
	f.Add(newerPerfFile())
	f.Add([]byte("PERFILE2\x10\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open(bytes.NewReader(data), int64(len(data)))
		r2, err2 := OpenBytes(data)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Open: %v, OpenBytes: %v", err, err2)
		}
		if err != nil {
			return
		}
		// Both readers see the same records and stop at the same one.
		defer r.Close()
		defer r2.Close()
		for i := 0; i < 100000; i++ {
			a, err := r.Next()
			b, err2 := r2.Next()
			if (err == nil) != (err2 == nil) {
				t.Fatalf("record %d: Open: %v, OpenBytes: %v", i, err, err2)
			}
			if err != nil {
				return
			}
			if a.Type != b.Type || a.Offset != b.Offset || !bytes.Equal(a.Body, b.Body) {
				t.Fatalf("record %d: Open gives type %d at %#x, OpenBytes type %d at %#x", i, a.Type, a.Offset, b.Type, b.Offset)
			}
		}
	})
}

// FuzzPipe feeds arbitrary bytes after a pipe header.
func FuzzPipe(f *testing.F) {
	good := sampleFile()
	// The synthetic file's data section, as pipe records after their attrs.
	var pipe bytes.Buffer
	pipe.WriteString("PERFILE2\x10\x00\x00\x00\x00\x00\x00\x00")
	attr := make([]byte, 8+112+8)
	le.PutUint32(attr, RecordHeaderAttr)
	le.PutUint16(attr[6:], uint16(len(attr)))
	copy(attr[8:], good[le.Uint64(good[24:]):][:112])
	le.PutUint64(attr[8+112:], 11)
	pipe.Write(attr)
	pipe.Write(good[le.Uint64(good[40:]):][:le.Uint64(good[48:])])
	f.Add(pipe.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewPipeReader(io.MultiReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		readAll(r)
	})
}

// FuzzLazySorter: a lazy Sorter hands out the records an eager one does, and
// DecodeSample on a lazy sample's body fails or succeeds with the eager
// decoding, alike.
func FuzzLazySorter(f *testing.F) {
	f.Add(sampleFile())
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := OpenBytes(data)
		if err != nil {
			return
		}
		r2, _ := OpenBytes(data)
		defer r.Close()
		defer r2.Close()
		eager, lazy := NewSorter(r, 1<<20), NewSorter(r2, 1<<20)
		lazy.SetLazySamples(true)
		var s Sample
		for i := 0; i < 100000; i++ {
			a, err := eager.Next()
			b, err2 := lazy.Next()
			if err != nil {
				if err2 == nil && (b.Type != RecordSample || DecodeSample(b.Sample.Attr, b.Body, b.Offset, &s) == nil) {
					t.Fatalf("record %d: eager %v, lazy a good record at %#x", i, err, b.Offset)
				}
				return
			}
			if err2 != nil {
				t.Fatalf("record %d: eager type %d at %#x, lazy %v", i, a.Type, a.Offset, err2)
			}
			if a.Type != b.Type || a.Offset != b.Offset {
				t.Fatalf("record %d: eager type %d at %#x, lazy type %d at %#x", i, a.Type, a.Offset, b.Type, b.Offset)
			}
			if a.Type != RecordSample {
				continue
			}
			if err := DecodeSample(b.Sample.Attr, b.Body, b.Offset, &s); err != nil {
				t.Fatalf("record %d at %#x: eager decoded, lazy %v", i, a.Offset, err)
			}
			if s.PID != a.Sample.PID || s.TID != a.Sample.TID || s.Time != a.Sample.Time || s.IP != a.Sample.IP ||
				len(s.Callchain) != len(a.Sample.Callchain) || len(s.Regs) != len(a.Sample.Regs) || !bytes.Equal(s.Stack, a.Sample.Stack) {
				t.Fatalf("record %d at %#x: lazy decoding differs", i, a.Offset)
			}
			if b.Sample.PID != a.Sample.PID || b.Sample.TID != a.Sample.TID || b.Sample.Time != a.Sample.Time {
				t.Fatalf("record %d at %#x: lazy ids %d/%d %d, eager %d/%d %d", i, a.Offset, b.Sample.PID, b.Sample.TID, b.Sample.Time, a.Sample.PID, a.Sample.TID, a.Sample.Time)
			}
		}
	})
}
