// Command repeat makes a big recording out of a small one, for measuring
// throughput where the machine cannot record a big one (a loaded VM gives the
// recorded program too little CPU): it writes the recording's data section N
// times, each copy's timestamps after the previous copy's, so the copies are
// processes that run one after the other (their COMM, MMAP, FORK and EXIT
// records come along). Records perf synthesizes for the whole file (thread
// and CPU maps, time conversion, id index) stay in the first copy only. The
// header and the feature sections (build-ids...) are the original's.
//
//	go run ./bench/perf/repeat -n N IN OUT
//
// Only uncompressed file-mode recordings of one event are supported.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"os"

	"github.com/sondedbg/sonde/perfdata"
)

var le = binary.LittleEndian

func main() {
	n := flag.Int("n", 4, "copies of the data section")
	flag.Parse()
	if flag.NArg() != 2 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: repeat -n N IN OUT")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *n); err != nil {
		fmt.Fprintln(os.Stderr, "repeat:", err)
		os.Exit(1)
	}
}

func run(in, out string, n int) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	r, err := perfdata.OpenBytes(data)
	if err != nil {
		return err
	}
	if r.Pipe || len(r.Attrs) != 1 {
		return fmt.Errorf("%s: want a file-mode recording of one event", in)
	}
	st := r.Attrs[0].SampleType
	idAll := r.Attrs[0].SampleIDAll()
	dataOff, dataLen := le.Uint64(data[40:]), le.Uint64(data[48:])
	// Where each record's timestamp is, and the recording's time span.
	type rec struct {
		off, size int
		timeAt    int // offset of the time in the record, -1: none
		keep      bool
	}
	var recs []rec
	var first, last uint64
	for {
		x, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if x.Type == perfdata.RecordCompressed || x.Type == perfdata.RecordCompressed2 {
			return fmt.Errorf("%s: compressed recordings are not supported", in)
		}
		size := len(x.Body) + 8
		t := rec{off: int(x.Offset), size: size, timeAt: -1, keep: x.Type < 64 || x.Type == perfdata.RecordFinishedRound}
		switch {
		case x.Type == perfdata.RecordSample && st&perfdata.SampleTime != 0:
			t.timeAt = 8 + 8*bits.OnesCount64(st&(perfdata.SampleIdentifier|perfdata.SampleIP|perfdata.SampleTID))
		case x.Type == perfdata.RecordFork || x.Type == perfdata.RecordExit:
			t.timeAt = 8 + 16
		case x.Type < 64 && idAll && st&perfdata.SampleTime != 0:
			n := 8 * bits.OnesCount64(st&(perfdata.SampleTID|perfdata.SampleTime|perfdata.SampleID|perfdata.SampleStreamID|perfdata.SampleCPU|perfdata.SampleIdentifier))
			t.timeAt = size - n
			if st&perfdata.SampleTID != 0 {
				t.timeAt += 8
			}
		}
		if t.timeAt >= 8 && t.timeAt+8 <= size {
			v := le.Uint64(data[t.off+t.timeAt:])
			if v != 0 && (first == 0 || v < first) {
				first = v
			}
			last = max(last, v)
		} else {
			t.timeAt = -1
		}
		recs = append(recs, t)
	}
	span := last - first + 1e6 // 1 ms between copies
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	// Header and attrs as they are; the data section grows; the feature
	// sections move after it.
	head := append([]byte(nil), data[:dataOff]...)
	var body []byte
	var written uint64
	for k := 0; k < n; k++ {
		body = body[:0]
		for _, t := range recs {
			if k > 0 && !t.keep {
				continue
			}
			start := len(body)
			body = append(body, data[t.off:t.off+t.size]...)
			if t.timeAt >= 0 && k > 0 {
				p := body[start+t.timeAt:]
				if v := le.Uint64(p); v != 0 {
					le.PutUint64(p, v+uint64(k)*span)
				}
			}
		}
		if k == 0 {
			if _, err := f.Write(head); err != nil {
				return err
			}
		}
		if _, err := f.Write(body); err != nil {
			return err
		}
		written += uint64(len(body))
	}
	grow := written - dataLen
	le.PutUint64(head[48:], written)
	// The feature section headers: {u64 offset, u64 size} each, all after
	// the data; their offsets move with it.
	tail := append([]byte(nil), data[dataOff+dataLen:]...)
	for i := range r.Features {
		p := tail[16*i:]
		le.PutUint64(p, le.Uint64(p)+grow)
	}
	if _, err := f.Write(tail); err != nil {
		return err
	}
	if _, err := f.WriteAt(head[:104], 0); err != nil {
		return err
	}
	return f.Close()
}
