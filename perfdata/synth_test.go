package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// synth builds small perf.data files in file mode for tests and fuzz seeds:
// attrs (each 112 bytes of perf_event_attr), records, and the build-id and
// arch features.
type synth struct {
	attrs   [][]byte
	ids     [][]uint64
	data    bytes.Buffer
	buildID []byte
	arch    string
	// extra are feature sections past arch's bit (in bit order), written
	// as they are.
	extra []extraFeature
}

type extraFeature struct {
	bit int
	sec []byte
}

func (s *synth) attr(sampleType, regsUser uint64, stackUser uint32, sampleIDAll bool, ids ...uint64) {
	a := make([]byte, 112)
	binary.LittleEndian.PutUint32(a[4:], 112)
	binary.LittleEndian.PutUint64(a[24:], sampleType)
	if sampleIDAll {
		binary.LittleEndian.PutUint64(a[40:], flagSampleIDAll)
	}
	binary.LittleEndian.PutUint64(a[80:], regsUser)
	binary.LittleEndian.PutUint32(a[88:], stackUser)
	s.attrs = append(s.attrs, a)
	s.ids = append(s.ids, ids)
}

func (s *synth) record(typ uint32, misc uint16, body ...any) {
	var b bytes.Buffer
	for _, v := range body {
		binary.Write(&b, binary.LittleEndian, v)
	}
	for b.Len()%8 != 0 {
		b.WriteByte(0)
	}
	var h [8]byte
	binary.LittleEndian.PutUint32(h[:], typ)
	binary.LittleEndian.PutUint16(h[4:], misc)
	binary.LittleEndian.PutUint16(h[6:], uint16(8+b.Len()))
	s.data.Write(h[:])
	s.data.Write(b.Bytes())
}

func (s *synth) bytes() []byte {
	var out bytes.Buffer
	out.Write(make([]byte, fileHeaderSize))
	// ids, then attrs, then data, then feature headers and sections.
	idOff := make([]uint64, len(s.ids))
	for i, ids := range s.ids {
		idOff[i] = uint64(out.Len())
		binary.Write(&out, binary.LittleEndian, ids)
	}
	attrsOff := uint64(out.Len())
	for i, a := range s.attrs {
		out.Write(a)
		binary.Write(&out, binary.LittleEndian, []uint64{idOff[i], uint64(8 * len(s.ids[i]))})
	}
	attrsLen := uint64(out.Len()) - attrsOff
	dataOff := uint64(out.Len())
	out.Write(s.data.Bytes())
	dataLen := uint64(out.Len()) - dataOff
	var feats []int
	var secs [][]byte
	if s.buildID != nil {
		var e bytes.Buffer
		name := []byte("/bin/synth\x00\x00\x00\x00\x00\x00")
		binary.Write(&e, binary.LittleEndian, []uint32{RecordHeaderBuildID})
		binary.Write(&e, binary.LittleEndian, []uint16{MiscBuildIDSize | MiscUser, uint16(8 + 4 + 24 + len(name))})
		binary.Write(&e, binary.LittleEndian, int32(-1))
		id := make([]byte, 24)
		copy(id, s.buildID)
		id[20] = byte(len(s.buildID))
		e.Write(id)
		e.Write(name)
		feats, secs = append(feats, FeatureBuildID), append(secs, e.Bytes())
	}
	if s.arch != "" {
		var e bytes.Buffer
		str := []byte(s.arch + "\x00")
		for len(str)%8 != 0 {
			str = append(str, 0)
		}
		binary.Write(&e, binary.LittleEndian, uint32(len(str)))
		e.Write(str)
		feats, secs = append(feats, FeatureArch), append(secs, e.Bytes())
	}
	for _, e := range s.extra {
		feats, secs = append(feats, e.bit), append(secs, e.sec)
	}
	secAt := uint64(out.Len()) + uint64(16*len(feats))
	for i := range feats {
		binary.Write(&out, binary.LittleEndian, []uint64{secAt, uint64(len(secs[i]))})
		secAt += uint64(len(secs[i]))
	}
	for _, sec := range secs {
		out.Write(sec)
	}
	b := out.Bytes()
	copy(b, "PERFILE2")
	le.PutUint64(b[8:], fileHeaderSize)
	le.PutUint64(b[16:], 112+16)
	le.PutUint64(b[24:], attrsOff)
	le.PutUint64(b[32:], attrsLen)
	le.PutUint64(b[40:], dataOff)
	le.PutUint64(b[48:], dataLen)
	for _, f := range feats {
		b[72+f/8] |= 1 << (f % 8)
	}
	return b
}

// sampleFile is a recording of two events told apart by PERF_SAMPLE_IDENTIFIER,
// with an mmap, a comm and samples carrying registers and stack copies.
func sampleFile() []byte {
	var s synth
	st := uint64(SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCallchain | SampleRegsUser | SampleStackUser)
	regs := uint64(1<<RegBP | 1<<RegSP | 1<<RegIP)
	s.attr(st, regs, 16, true, 11, 12)
	s.attr(st, regs, 16, true, 21)
	s.record(RecordMmap2, MiscUser, uint32(7), uint32(7), uint64(0x400000), uint64(0x1000), uint64(0),
		uint32(8), uint32(1), uint64(99), uint64(0), uint32(5), uint32(2), []byte("/bin/synth\x00\x00\x00\x00\x00\x00"),
		uint32(7), uint32(7), uint64(100), uint64(21)) // trailer: tid, time, identifier
	s.record(RecordComm, MiscUser|MiscCommExec, uint32(7), uint32(7), []byte("synth\x00\x00\x00"),
		uint32(7), uint32(7), uint64(101), uint64(11))
	for i, id := range []uint64{12, 21} {
		s.record(RecordSample, MiscUser, id, uint64(0x400010+i), uint32(7), uint32(8), uint64(200+i),
			uint64(3), ContextUser, uint64(0x400010+i), uint64(0x400400),
			uint64(2), uint64(0x7ffff000), uint64(0x7fff0000), uint64(0x400010+i),
			uint64(16), []byte("0123456789abcdef"), uint64(12))
	}
	s.record(RecordLost, 0, uint64(12), uint64(5), uint32(7), uint32(7), uint64(300), uint64(12))
	s.record(RecordFinishedRound, 0)
	s.buildID = []byte{0xde, 0xad, 0xbe, 0xef}
	s.arch = "x86_64"
	return s.bytes()
}

func TestSyntheticTwoEvents(t *testing.T) {
	data := sampleFile()
	r, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Arch != "x86_64" || len(r.BuildIDs) != 1 || !bytes.Equal(r.BuildIDs[0].BuildID, []byte{0xde, 0xad, 0xbe, 0xef}) || r.BuildIDs[0].Filename != "/bin/synth" {
		t.Fatalf("features: arch %q build-ids %+v", r.Arch, r.BuildIDs)
	}
	var samples []Sample
	var mmap Mmap
	var comm Comm
	var lost Lost
	var trailers []SampleIDTrailer
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Type {
		case RecordSample:
			s := rec.Sample
			s.Stack = append([]byte(nil), s.Stack...)
			s.Callchain = append([]uint64(nil), s.Callchain...)
			s.Regs = append([]uint64(nil), s.Regs...)
			samples = append(samples, s)
		case RecordMmap2:
			mmap = rec.Mmap
			trailers = append(trailers, rec.ID)
		case RecordComm:
			comm = rec.Comm
			trailers = append(trailers, rec.ID)
		case RecordLost:
			lost = rec.Lost
		}
	}
	if mmap.Filename != "/bin/synth" || mmap.Addr != 0x400000 || !mmap.Exec || mmap.Ino != 99 {
		t.Errorf("mmap2: %+v", mmap)
	}
	if comm.Name != "synth" || !comm.Exec || comm.PID != 7 {
		t.Errorf("comm: %+v", comm)
	}
	if lost.Lost != 5 {
		t.Errorf("lost: %+v", lost)
	}
	if len(trailers) != 2 || trailers[0].Time != 100 || trailers[0].ID != 21 || trailers[1].ID != 11 {
		t.Errorf("sample_id trailers: %+v", trailers)
	}
	if len(samples) != 2 {
		t.Fatalf("%d samples", len(samples))
	}
	if samples[0].Attr != r.Attrs[0] || samples[1].Attr != r.Attrs[1] {
		t.Errorf("samples not matched to their events by identifier")
	}
	s := samples[1]
	if sp, _ := s.Reg(RegSP); sp != 0x7fff0000 || string(s.Stack) != "0123456789ab" || s.TID != 8 || len(s.Callchain) != 3 {
		t.Errorf("sample: %+v", s)
	}
	if _, ok := s.Reg(RegAX); ok {
		t.Errorf("a register the sample does not hold")
	}
}

// TestBadInputSaysWhere truncates and corrupts a good file: each gives an
// error with the offset, never a panic.
func TestBadInputSaysWhere(t *testing.T) {
	good := sampleFile()
	var fe *FormatError
	for _, tc := range []struct {
		name string
		mod  func([]byte) []byte
	}{
		{"magic", func(b []byte) []byte { copy(b, "PERFILE3"); return b }},
		{"big-endian", func(b []byte) []byte { copy(b, "2ELIFREP"); return b }},
		{"short", func(b []byte) []byte { return b[:50] }},
		{"data past the end", func(b []byte) []byte { le.PutUint64(b[48:], 1<<40); return b }},
		{"attr size", func(b []byte) []byte { le.PutUint64(b[16:], 8); return b }},
		{"record size 0", func(b []byte) []byte { le.PutUint16(b[le.Uint64(b[40:])+6:], 0); return b }},
		{"truncated data", func(b []byte) []byte {
			le.PutUint64(b[48:], le.Uint64(b[48:])-3)
			return b
		}},
	} {
		b := tc.mod(append([]byte(nil), good...))
		r, err := Open(bytes.NewReader(b), int64(len(b)))
		for err == nil {
			_, err = r.Next()
		}
		if err == io.EOF || !errors.As(err, &fe) {
			t.Errorf("%s: %v, want a FormatError", tc.name, err)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
	}
}
