package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
)

// Record is one record of the data section. The reader reuses one Record and
// its buffers: everything in it, slices and the Sample's stack bytes included,
// is valid only until the next call to Next. Only the part that matches Type
// is filled in.
type Record struct {
	Type   uint32
	Misc   uint16
	Offset int64  // where the record starts in the input (inside a decompressed block: where that block's record starts)
	Body   []byte // the bytes after the 8-byte header
	// InPlace says Body (and the Sample's Stack, a slice of it) is the
	// input's own memory (OpenBytes), valid as long as that is rather than
	// until the next call. The other slices (Callchain, Regs) are the
	// reader's buffers and are reused all the same.
	InPlace bool
	// Chunk, for a record read in place from a file in chunks, is the chunk
	// holding it: Retain keeps Body and Stack valid past the next call.
	Chunk *Chunk
	// Lazy says a sample is decoded only in part (Sorter.SetLazySamples):
	// its Sample holds Attr, PID, TID and Time; DecodeSample decodes Body.
	Lazy bool

	Sample Sample // RecordSample
	Mmap   Mmap   // RecordMmap, RecordMmap2
	Comm   Comm   // RecordComm
	Task   Task   // RecordFork, RecordExit
	Lost   Lost   // RecordLost, RecordLostSamples
	// ID is the sample_id trailer of a non-sample record (when the event has
	// sample_id_all), telling which thread, when and on which CPU.
	ID SampleIDTrailer
}

// CPUMode is the record's cpumode: MiscKernel, MiscUser, ...
func (r *Record) CPUMode() uint16 { return r.Misc & MiscCPUModeMask }

// Sample is a SAMPLE record's fields, as present per its event's sample_type.
type Sample struct {
	Attr     *Attr
	IP       uint64
	PID, TID uint32
	Time     uint64
	Addr     uint64
	ID       uint64
	StreamID uint64
	CPU      uint32
	Period   uint64
	// Callchain holds the kernel's callchain, context markers included
	// (ContextKernel, ContextUser...).
	Callchain []uint64
	// RegsABI is 0 when the sample has no user registers (a kernel thread).
	RegsABI uint64
	// RegsMask says which registers Regs holds, in bit order (perf's
	// numbering: RegIP, RegSP...).
	RegsMask uint64
	Regs     []uint64
	// Stack is the copy of the user stack starting at the sampled SP, only
	// the bytes the kernel says are valid (dyn_size).
	Stack []byte
}

// Reg returns the user register perf numbers reg, when the sample holds it.
func (s *Sample) Reg(reg int) (uint64, bool) {
	if s.RegsABI == 0 || reg < 0 || reg > 63 || s.RegsMask&(1<<reg) == 0 {
		return 0, false
	}
	i := bits.OnesCount64(s.RegsMask & (1<<reg - 1))
	if i >= len(s.Regs) {
		return 0, false
	}
	return s.Regs[i], true
}

// Mmap is an MMAP or MMAP2 record: a file (or anonymous memory, or the
// kernel) mapped at [Addr, Addr+Len) from file offset PgOff.
type Mmap struct {
	PID, TID   uint32
	Addr, Len  uint64
	PgOff      uint64
	Filename   string
	Exec       bool   // an executable mapping (MMAP: not MISC_MMAP_DATA; MMAP2: PROT_EXEC)
	Prot       uint32 // MMAP2 only
	Flags      uint32 // MMAP2 only
	BuildID    []byte // MMAP2 with MISC_MMAP_BUILD_ID
	Maj, Min   uint32
	Ino        uint64
	InoGen     uint64
	HasInodeID bool // MMAP2 without a build-id: Maj, Min, Ino, InoGen are set
}

// Comm is a COMM record; Exec says the process exec'd (its address space is new).
type Comm struct {
	PID, TID uint32
	Name     string
	Exec     bool
}

// Task is a FORK or EXIT record.
type Task struct {
	PID, PPID uint32
	TID, PTID uint32
	Time      uint64
}

// Lost is a LOST record (samples dropped in the kernel ring buffer) or a
// LOST_SAMPLES record (dropped by the kernel before they reached it).
type Lost struct {
	ID   uint64
	Lost uint64
}

// SampleIDTrailer is the sample_id part of non-sample records.
type SampleIDTrailer struct {
	Valid    bool
	PID, TID uint32
	Time     uint64
	ID       uint64
	StreamID uint64
	CPU      uint32
}

// Next returns the next record, or io.EOF after the last one. A record type
// this reader does not decode is returned with only Type, Misc, Offset and
// Body. Pipe-mode header records (HEADER_ATTR, HEADER_FEATURE...) update
// Header and are returned too.
func (r *Reader) Next() (*Record, error) {
	for {
		if r.inflate != nil {
			rec, err := r.inflate.next(r)
			if err == nil {
				return rec, nil
			}
			if err != io.EOF {
				return nil, err
			}
			r.inflate = nil
		}
		rec, err := r.readRecord()
		if err != nil {
			return nil, err
		}
		if rec.Type == RecordCompressed || rec.Type == RecordCompressed2 {
			r.CompressedBlocks++
			if err := r.startInflate(rec); err != nil {
				return nil, err
			}
			continue
		}
		return rec, nil
	}
}

// readRecord reads one record from the input stream.
func (r *Reader) readRecord() (*Record, error) {
	if r.mem != nil || r.ra != nil {
		return r.memRecord()
	}
	off := r.pos
	if r.end >= 0 && off >= r.end {
		return nil, io.EOF
	}
	var h [8]byte
	if _, err := io.ReadFull(r.src, h[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, &FormatError{Offset: off, What: "reading a record header", Err: err}
	}
	size := int(le.Uint16(h[6:]))
	if size < 8 {
		return nil, formatErr(off, "record of type %d with size %d (less than its header)", le.Uint32(h[:]), size)
	}
	if cap(r.buf) < size-8 {
		r.buf = make([]byte, 0, 1<<16)
	}
	body := r.buf[:size-8]
	if _, err := io.ReadFull(r.src, body); err != nil {
		return nil, &FormatError{Offset: off, What: "reading a record's body", Err: noEOF(err)}
	}
	r.pos += int64(size)
	if err := r.decode(le.Uint32(h[:]), le.Uint16(h[4:]), body, off); err != nil {
		return nil, err
	}
	if r.rec.Type == RecordAuxtrace {
		if err := r.skipAuxtrace(body, off); err != nil {
			return nil, err
		}
	}
	return &r.rec, nil
}

// memRecord decodes the next record where it lies in r.mem.
func (r *Reader) memRecord() (*Record, error) {
	off := r.pos
	if off >= r.end {
		return nil, io.EOF
	}
	if r.end-off < 8 {
		return nil, &FormatError{Offset: off, What: "reading a record header", Err: io.ErrUnexpectedEOF}
	}
	if r.ra != nil && off+8 > r.memOff+int64(len(r.mem)) {
		if err := r.refill(8); err != nil {
			return nil, &FormatError{Offset: off, What: "reading a record header", Err: err}
		}
	}
	h := r.mem[off-r.memOff : off-r.memOff+8]
	size := int64(le.Uint16(h[6:]))
	if size < 8 {
		return nil, formatErr(off, "record of type %d with size %d (less than its header)", le.Uint32(h), size)
	}
	if size > r.end-off {
		return nil, &FormatError{Offset: off, What: "reading a record's body", Err: io.ErrUnexpectedEOF}
	}
	if r.ra != nil && off+size > r.memOff+int64(len(r.mem)) {
		if err := r.refill(size); err != nil {
			return nil, &FormatError{Offset: off, What: "reading a record's body", Err: err}
		}
		h = r.mem[:8]
	}
	at := off - r.memOff
	body := r.mem[at+8 : at+size : at+size]
	r.pos += size
	if err := r.decode(le.Uint32(h), le.Uint16(h[4:]), body, off); err != nil {
		return nil, err
	}
	r.rec.InPlace, r.rec.Chunk = true, r.chunk
	if r.rec.Type == RecordAuxtrace {
		if err := r.skipAuxtrace(body, off); err != nil {
			return nil, err
		}
	}
	return &r.rec, nil
}

// skipAuxtrace skips the trace data that follows an AUXTRACE record in the
// stream ({u64 size, ...}: size bytes follow the record).
func (r *Reader) skipAuxtrace(body []byte, off int64) error {
	if len(body) < 8 {
		return formatErr(off, "auxtrace record of %d bytes", len(body))
	}
	n := le.Uint64(body)
	if r.end >= 0 && n > uint64(r.end-r.pos) {
		return formatErr(off, "auxtrace data of %d bytes past the data section's end", n)
	}
	if r.mem != nil || r.ra != nil {
		if n > uint64(r.end-r.pos) {
			return &FormatError{Offset: off, What: "skipping auxtrace data", Err: io.ErrUnexpectedEOF}
		}
		r.pos += int64(n)
		return nil
	}
	got, err := io.CopyN(io.Discard, r.src, int64(n))
	r.pos += got
	if err != nil {
		return &FormatError{Offset: off, What: "skipping auxtrace data", Err: noEOF(err)}
	}
	return nil
}

// decode fills r.rec from one record.
func (r *Reader) decode(typ uint32, misc uint16, body []byte, off int64) error {
	rec := &r.rec
	rec.Type, rec.Misc, rec.Offset, rec.Body, rec.InPlace, rec.Chunk, rec.Lazy = typ, misc, off, body, false, nil, false
	rec.ID = SampleIDTrailer{}
	switch typ {
	case RecordSample:
		if r.timeOnly {
			r.sampleTime(body)
			return nil
		}
		return r.decodeSample(body, misc, off)
	case RecordMmap:
		return r.decodeMmap(body, misc, off, false)
	case RecordMmap2:
		return r.decodeMmap(body, misc, off, true)
	case RecordComm:
		return r.decodeComm(body, misc, off)
	case RecordFork, RecordExit:
		if len(body) < 24 {
			return formatErr(off, "fork/exit record of %d bytes", len(body))
		}
		rec.Task = Task{PID: le.Uint32(body), PPID: le.Uint32(body[4:]), TID: le.Uint32(body[8:]), PTID: le.Uint32(body[12:]), Time: le.Uint64(body[16:])}
		r.trailer(body, 24)
	case RecordLost:
		if len(body) < 16 {
			return formatErr(off, "lost record of %d bytes", len(body))
		}
		rec.Lost = Lost{ID: le.Uint64(body), Lost: le.Uint64(body[8:])}
		r.trailer(body, 16)
	case RecordLostSamples:
		if len(body) < 8 {
			return formatErr(off, "lost-samples record of %d bytes", len(body))
		}
		rec.Lost = Lost{Lost: le.Uint64(body)}
		r.trailer(body, 8)
	case RecordHeaderAttr:
		return r.decodeHeaderAttr(body, off)
	case RecordHeaderFeature:
		if len(body) < 8 {
			return formatErr(off, "header feature record of %d bytes", len(body))
		}
		bit := int(le.Uint64(body))
		if bit > 0 && bit < featureBits {
			r.Features = append(r.Features, bit)
			if wantFeature(bit) {
				return r.parseFeature(bit, body[8:], off+16)
			}
		}
	case RecordHeaderBuildID:
		// Pipe mode: one build-id entry per record, laid out as in the table.
		full := make([]byte, 8+len(body))
		le.PutUint32(full, typ)
		le.PutUint16(full[4:], misc)
		le.PutUint16(full[6:], uint16(8+len(body)))
		copy(full[8:], body)
		ids, err := parseBuildIDs(full, off)
		if err != nil {
			return err
		}
		r.BuildIDs = append(r.BuildIDs, ids...)
	}
	return nil
}

// decodeHeaderAttr handles a pipe-mode attr: {perf_event_attr; u64 ids[]}.
func (r *Reader) decodeHeaderAttr(body []byte, off int64) error {
	if len(body) < attrMin {
		return formatErr(off, "header attr record of %d bytes", len(body))
	}
	asz := int(le.Uint32(body[4:])) // perf_event_attr.size
	if asz < attrMin || asz > len(body) {
		return formatErr(off+8+4, "attr size %d in a record of %d bytes", asz, len(body))
	}
	a, err := parseAttr(body[:asz], off+8)
	if err != nil {
		return err
	}
	for p := asz; p+8 <= len(body); p += 8 {
		a.IDs = append(a.IDs, le.Uint64(body[p:]))
	}
	r.Attrs = append(r.Attrs, a)
	return r.indexAttrs()
}

func (r *Reader) decodeMmap(b []byte, misc uint16, off int64, v2 bool) error {
	m := &r.rec.Mmap
	*m = Mmap{}
	fixed := 32
	if v2 {
		fixed = 64
	}
	if len(b) < fixed {
		return formatErr(off, "mmap record of %d bytes", len(b))
	}
	m.PID, m.TID = le.Uint32(b), le.Uint32(b[4:])
	m.Addr, m.Len, m.PgOff = le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
	if v2 {
		if misc&MiscMmapBuildID != 0 {
			n := int(b[32])
			if n > 20 {
				return formatErr(off+8+32, "mmap2 build-id length %d", n)
			}
			m.BuildID = append(m.BuildID[:0], b[36:36+n]...)
		} else {
			m.Maj, m.Min = le.Uint32(b[32:]), le.Uint32(b[36:])
			m.Ino, m.InoGen = le.Uint64(b[40:]), le.Uint64(b[48:])
			m.HasInodeID = true
		}
		m.Prot, m.Flags = le.Uint32(b[56:]), le.Uint32(b[60:])
		m.Exec = m.Prot&4 != 0 // PROT_EXEC
	} else {
		m.Exec = misc&MiscMmapData == 0
	}
	name, n := nulString(b[fixed:])
	m.Filename = name
	r.trailer(b, fixed+n)
	return nil
}

func (r *Reader) decodeComm(b []byte, misc uint16, off int64) error {
	if len(b) < 8 {
		return formatErr(off, "comm record of %d bytes", len(b))
	}
	name, n := nulString(b[8:])
	r.rec.Comm = Comm{PID: le.Uint32(b), TID: le.Uint32(b[4:]), Name: name, Exec: misc&MiscCommExec != 0}
	r.trailer(b, 8+n)
	return nil
}

// nulString returns the NUL-terminated string at the start of b and the bytes
// it occupies, padded to 8 as perf pads strings in records.
func nulString(b []byte) (string, int) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), len(b)
	}
	n := (i + 1 + 7) &^ 7
	if n > len(b) {
		n = len(b)
	}
	return string(b[:i]), n
}

// trailer decodes the sample_id trailer of a non-sample record whose own
// fields take the first fixed bytes of b.
func (r *Reader) trailer(b []byte, fixed int) {
	a := r.attrFor(b, false)
	if a == nil || !a.SampleIDAll() {
		return
	}
	st := a.SampleType
	n := 8 * bits.OnesCount64(st&(SampleTID|SampleTime|SampleID|SampleStreamID|SampleCPU|SampleIdentifier))
	if n == 0 || len(b)-fixed < n {
		return
	}
	p := len(b) - n
	t := &r.rec.ID
	t.Valid = true
	if st&SampleTID != 0 {
		t.PID, t.TID = le.Uint32(b[p:]), le.Uint32(b[p+4:])
		p += 8
	}
	if st&SampleTime != 0 {
		t.Time = le.Uint64(b[p:])
		p += 8
	}
	if st&SampleID != 0 {
		t.ID = le.Uint64(b[p:])
		p += 8
	}
	if st&SampleStreamID != 0 {
		t.StreamID = le.Uint64(b[p:])
		p += 8
	}
	if st&SampleCPU != 0 {
		t.CPU = le.Uint32(b[p:])
		p += 8
	}
	if st&SampleIdentifier != 0 {
		t.ID = le.Uint64(b[p:])
	}
}

// cursor reads little-endian fields from a record body, remembering the
// first read that went past its end.
type cursor struct {
	b   []byte
	p   int
	bad bool
}

func (c *cursor) u64() uint64 {
	if c.bad || len(c.b)-c.p < 8 {
		c.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint64(c.b[c.p:])
	c.p += 8
	return v
}

func (c *cursor) u32pair() (uint32, uint32) {
	if c.bad || len(c.b)-c.p < 8 {
		c.bad = true
		return 0, 0
	}
	a, b := le.Uint32(c.b[c.p:]), le.Uint32(c.b[c.p+4:])
	c.p += 8
	return a, b
}

func (c *cursor) bytes(n uint64) []byte {
	if c.bad || n > uint64(len(c.b)-c.p) {
		c.bad = true
		return nil
	}
	v := c.b[c.p : c.p+int(n)]
	c.p += int(n)
	return v
}

// skip passes n u64s.
func (c *cursor) skip(n uint64) {
	if c.bad || n > uint64(len(c.b)-c.p)/8 {
		c.bad = true
		return
	}
	c.p += int(n) * 8
}

// sampleTime fills in only a sample's event and time, for a Sorter that
// decodes the rest when the sample goes out (a sample is decoded once).
func (r *Reader) sampleTime(b []byte) {
	s := &r.rec.Sample
	s.Attr, s.Time = r.attrFor(b, true), 0
	if s.Attr == nil || s.Attr.SampleType&SampleTime == 0 {
		return
	}
	at := 8 * bits.OnesCount64(s.Attr.SampleType&(SampleIdentifier|SampleIP|SampleTID))
	if at+8 <= len(b) {
		s.Time = le.Uint64(b[at:])
	}
}

// sampleIDs fills in a sample's event, pid, tid and time, for a lazy
// Sorter: the reading goroutine follows the processes by them and leaves
// the rest to DecodeSample on another.
func (r *Reader) sampleIDs(b []byte) {
	s := &r.rec.Sample
	*s = Sample{Callchain: s.Callchain[:0], Regs: s.Regs[:0]}
	r.sampleTime(b)
	if s.Attr == nil || s.Attr.SampleType&SampleTID == 0 {
		return
	}
	at := 8 * bits.OnesCount64(s.Attr.SampleType&(SampleIdentifier|SampleIP))
	if at+8 <= len(b) {
		s.PID, s.TID = le.Uint32(b[at:]), le.Uint32(b[at+4:])
	}
}

func (r *Reader) decodeSample(b []byte, misc uint16, off int64) error {
	return DecodeSample(r.attrFor(b, true), b, off, &r.rec.Sample)
}

// DecodeSample decodes the body of a SAMPLE record of event a (the one a
// lazy Sorter's record names in Sample.Attr) at input offset off into s,
// reusing s's Callchain and Regs. Safe for concurrent use with other
// decodings and with the Reader.
func DecodeSample(a *Attr, b []byte, off int64, s *Sample) error {
	if a == nil {
		return formatErr(off, "a sample before any event was described")
	}
	chain, regs := s.Callchain[:0], s.Regs[:0]
	*s = Sample{Attr: a}
	st := a.SampleType
	c := cursor{b: b}
	if st&SampleIdentifier != 0 {
		s.ID = c.u64()
	}
	if st&SampleIP != 0 {
		s.IP = c.u64()
	}
	if st&SampleTID != 0 {
		s.PID, s.TID = c.u32pair()
	}
	if st&SampleTime != 0 {
		s.Time = c.u64()
	}
	if st&SampleAddr != 0 {
		s.Addr = c.u64()
	}
	if st&SampleID != 0 {
		s.ID = c.u64()
	}
	if st&SampleStreamID != 0 {
		s.StreamID = c.u64()
	}
	if st&SampleCPU != 0 {
		s.CPU, _ = c.u32pair()
	}
	if st&SamplePeriod != 0 {
		s.Period = c.u64()
	}
	if st&SampleRead != 0 {
		skipRead(&c, a.ReadFormat)
	}
	if st&SampleCallchain != 0 {
		n := c.u64()
		if n > uint64(len(b))/8 {
			return formatErr(off, "callchain of %d entries in a record of %d bytes", n, len(b))
		}
		for i := uint64(0); i < n && !c.bad; i++ {
			chain = append(chain, c.u64())
		}
	}
	s.Callchain = chain
	if st&SampleRaw != 0 {
		if c.bad || len(b)-c.p < 4 {
			c.bad = true
		} else {
			n := le.Uint32(b[c.p:])
			c.p += 4
			c.bytes(uint64(n))
		}
	}
	if st&SampleBranchStack != 0 {
		n := c.u64()
		if a.BranchSampleType&branchHWIndex != 0 {
			c.u64()
		}
		if n > uint64(len(b))/24 {
			return formatErr(off, "branch stack of %d entries in a record of %d bytes", n, len(b))
		}
		c.skip(3 * n)
		if a.BranchSampleType&branchCounters != 0 {
			c.skip(n)
		}
	}
	if st&SampleRegsUser != 0 {
		s.RegsABI = c.u64()
		if s.RegsABI != 0 {
			s.RegsMask = a.SampleRegsUser
			for i := bits.OnesCount64(a.SampleRegsUser); i > 0 && !c.bad; i-- {
				regs = append(regs, c.u64())
			}
		}
	}
	s.Regs = regs
	if st&SampleStackUser != 0 {
		size := c.u64()
		if size != 0 {
			data := c.bytes(size)
			dyn := c.u64()
			if dyn > size {
				dyn = size
			}
			if !c.bad {
				s.Stack = data[:dyn]
			}
		}
	}
	if c.bad {
		return &FormatError{Offset: off, What: fmt.Sprintf("sample fields past the record's end (sample_type %#x)", st), Err: errTruncated}
	}
	return nil
}

// skipRead passes a PERF_SAMPLE_READ block.
func skipRead(c *cursor, rf uint64) {
	per := uint64(1)
	if rf&readID != 0 {
		per++
	}
	if rf&readLost != 0 {
		per++
	}
	if rf&readGroup != 0 {
		nr := c.u64()
		if rf&readTotalTimeEnabled != 0 {
			c.u64()
		}
		if rf&readTotalTimeRunning != 0 {
			c.u64()
		}
		if nr > uint64(len(c.b))/8 {
			c.bad = true
			return
		}
		c.skip(nr * per)
		return
	}
	c.u64()
	if rf&readTotalTimeEnabled != 0 {
		c.u64()
	}
	if rf&readTotalTimeRunning != 0 {
		c.u64()
	}
	c.skip(per - 1)
}
