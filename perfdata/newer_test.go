package perfdata

import (
	"bytes"
	"io"
	"testing"
)

// newerPerfFile is sampleFile with what perf and kernels newer than 6.1
// write between the samples: NAMESPACES (16), KSYMBOL (17), BPF_EVENT (18),
// CGROUP (19), TEXT_POKE (20), AUX_OUTPUT_HW_ID (21), CALLCHAIN_DEFERRED
// (22, 6.17+), perf's STAT_CONFIG/STAT/STAT_ROUND (75–77), a perf-side
// type past COMPRESSED2 (84) and a kernel type not yet assigned (40), each
// with a sample_id trailer, and a header feature bit past those 6.1 knows.
func newerPerfFile() []byte {
	var s synth
	st := uint64(SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCallchain | SampleRegsUser | SampleStackUser)
	regs := uint64(1<<RegBP | 1<<RegSP | 1<<RegIP)
	s.attr(st, regs, 16, true, 11, 12)
	s.attr(st, regs, 16, true, 21)
	s.record(RecordMmap2, MiscUser, uint32(7), uint32(7), uint64(0x400000), uint64(0x1000), uint64(0),
		uint32(8), uint32(1), uint64(99), uint64(0), uint32(5), uint32(2), []byte("/bin/synth\x00\x00\x00\x00\x00\x00"),
		uint32(7), uint32(7), uint64(100), uint64(21))
	for i, typ := range []uint32{16, 17, 18, 19, 20, 21, 22, 40, 75, 76, 77, 84} {
		// A body of some words, then the trailer (tid, time, identifier).
		s.record(typ, 0, uint64(0xffffffffa0000000), uint64(0x1234), []byte("bpf_prog_x\x00\x00\x00\x00\x00\x00"),
			uint32(7), uint32(7), uint64(150+i), uint64(11))
		s.record(RecordSample, MiscUser, uint64(12), uint64(0x400010), uint32(7), uint32(8), uint64(200+i),
			uint64(3), ContextUser, uint64(0x400010), uint64(0x400400),
			uint64(2), uint64(0x7ffff000), uint64(0x7fff0000), uint64(0x400010),
			uint64(16), []byte("0123456789abcdef"), uint64(12))
	}
	s.record(RecordFinishedRound, 0)
	s.arch = "x86_64"
	// Feature 40: none in 6.1 (31 was its last); a counted string list.
	s.extra = []extraFeature{{bit: 40, sec: []byte("\x01\x00\x00\x00\x08\x00\x00\x00future\x00\x00")}}
	return s.bytes()
}

// TestNewerPerfRecordsSkipped: records a newer perf or kernel writes, and
// types no perf writes yet, are passed over by the reader (their type
// reported, the samples around them all read, in order) rather than
// refused, and an unknown feature bit does not stop the header; so a
// recording from a newer perf reads as far as sonde understands it.
func TestNewerPerfRecordsSkipped(t *testing.T) {
	data := newerPerfFile()
	r, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Arch != "x86_64" {
		t.Errorf("arch %q: the features after an unknown bit lost", r.Arch)
	}
	var times []uint64
	others := map[uint32]int{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("a newer record refused: %v", err)
		}
		switch rec.Type {
		case RecordSample:
			times = append(times, rec.Sample.Time)
		case RecordMmap2, RecordFinishedRound:
		default:
			others[rec.Type]++
		}
	}
	if len(times) != 12 {
		t.Fatalf("%d samples of 12", len(times))
	}
	for i, tm := range times {
		if tm != uint64(200+i) {
			t.Errorf("sample %d at time %d", i, tm)
		}
	}
	if len(others) != 12 {
		t.Errorf("other records seen: %v, want the 12 types", others)
	}
}
