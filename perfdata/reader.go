package perfdata

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

var le = binary.LittleEndian

// FormatError says where in the input the reader stopped making sense of it.
type FormatError struct {
	Offset int64  // byte offset in the file or stream
	What   string // what was wrong there
	Err    error  // the cause, when there is one (e.g. io.ErrUnexpectedEOF)
}

func (e *FormatError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("perfdata: offset %#x: %s: %v", e.Offset, e.What, e.Err)
	}
	return fmt.Sprintf("perfdata: offset %#x: %s", e.Offset, e.What)
}

func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(off int64, format string, args ...any) error {
	return &FormatError{Offset: off, What: fmt.Sprintf(format, args...)}
}

// Attr is one event of the recording: the parts of its perf_event_attr that
// decide how its records are laid out, and the sample ids that name it.
type Attr struct {
	Type             uint32
	Config           uint64
	SampleType       uint64
	ReadFormat       uint64
	Flags            uint64
	BranchSampleType uint64
	SampleRegsUser   uint64
	SampleStackUser  uint32
	SampleRegsIntr   uint64
	IDs              []uint64
	Name             string // from the event_desc feature, when recorded
}

// SampleIDAll reports whether the event's non-sample records carry a sample_id trailer.
func (a *Attr) SampleIDAll() bool { return a.Flags&flagSampleIDAll != 0 }

func parseAttr(b []byte, off int64) (*Attr, error) {
	if len(b) < attrMin {
		return nil, formatErr(off, "perf_event_attr of %d bytes, want at least %d", len(b), attrMin)
	}
	a := &Attr{
		Type:       le.Uint32(b[0:]),
		Config:     le.Uint64(b[8:]),
		SampleType: le.Uint64(b[24:]),
		ReadFormat: le.Uint64(b[32:]),
		Flags:      le.Uint64(b[40:]),
	}
	// Fields of later attr versions, when the entry is long enough to hold them.
	if len(b) >= 80 {
		a.BranchSampleType = le.Uint64(b[72:])
	}
	if len(b) >= 96 {
		a.SampleRegsUser = le.Uint64(b[80:])
		a.SampleStackUser = le.Uint32(b[88:])
	}
	if len(b) >= 104 {
		a.SampleRegsIntr = le.Uint64(b[96:])
	}
	return a, nil
}

// BuildID is one entry of the build-id table: the file perf saw and its build-id.
type BuildID struct {
	PID      int32
	Misc     uint16
	BuildID  []byte
	Filename string
}

// Header is what the recording says about itself.
type Header struct {
	Pipe      bool
	Attrs     []*Attr
	BuildIDs  []BuildID
	Hostname  string
	OSRelease string
	Version   string
	Arch      string
	Cmdline   []string
	NrCPUs    uint32 // online CPUs
	// Features lists the feature bits the file header announced.
	Features []int
}

// Stats counts what the reader passed that Next does not return as itself.
type Stats struct {
	// CompressedBlocks counts COMPRESSED records, whose contents Next returns
	// record by record.
	CompressedBlocks int
}

// Reader reads a perf.data file or stream record by record.
type Reader struct {
	Header
	Stats

	src *bufio.Reader
	pos int64 // offset of the next unread byte of the input
	// Records are decoded in place from mem, which holds the input's
	// bytes from offset memOff on: all of it (OpenBytes), or the chunk
	// being read (file mode, refilled from ra).
	mem     []byte
	memOff  int64
	ra      io.ReaderAt
	chunk   *Chunk
	pool    *chunkPool
	ahead   prefetch // reads of the next chunks, under way
	end     int64    // file mode: where the data section ends (-1: read to EOF)
	buf     []byte
	rec     Record
	byID    map[uint64]*Attr
	idPos   int // position of the id in a sample when attrs differ (-1: none)
	idFromE int // position from the end of a non-sample record's trailer (-1: none)
	// timeOnly: Next decodes only a sample's event and time (a Sorter's
	// reader: it decodes each sample when it hands it out).
	timeOnly bool

	inflate  *inflater // the decompressed block being read, if any
	spare    *inflater // kept for its buffers
	compress decompressor
}

// Open reads the header of a perf.data file in file mode (the output of
// `perf record`) from ra, of size bytes, and prepares to read its records.
func Open(ra io.ReaderAt, size int64) (*Reader, error) {
	var h [fileHeaderSize]byte
	if _, err := ra.ReadAt(h[:pipeHeaderSize], 0); err != nil {
		return nil, &FormatError{Offset: 0, What: "reading the file header", Err: noEOF(err)}
	}
	if err := checkMagic(h[:]); err != nil {
		return nil, err
	}
	hsize := le.Uint64(h[8:])
	if hsize == pipeHeaderSize {
		return NewPipeReader(io.NewSectionReader(ra, 0, size))
	}
	if hsize != fileHeaderSize {
		return nil, formatErr(8, "header size %d, want %d (file) or %d (pipe)", hsize, fileHeaderSize, pipeHeaderSize)
	}
	if _, err := ra.ReadAt(h[:], 0); err != nil {
		return nil, &FormatError{Offset: 0, What: "reading the file header", Err: noEOF(err)}
	}
	attrSize := le.Uint64(h[16:])
	attrsOff, attrsLen := le.Uint64(h[24:]), le.Uint64(h[32:])
	dataOff, dataLen := le.Uint64(h[40:]), le.Uint64(h[48:])
	if err := checkSection(size, 24, attrsOff, attrsLen); err != nil {
		return nil, err
	}
	if err := checkSection(size, 40, dataOff, dataLen); err != nil {
		return nil, err
	}
	r := &Reader{end: int64(dataOff + dataLen)}
	if attrsLen > 0 {
		if attrSize < attrMin+16 || attrSize > attrMax {
			return nil, formatErr(16, "attr entry size %d, want %d to %d", attrSize, attrMin+16, attrMax)
		}
		n := attrsLen / attrSize
		for i := uint64(0); i < n; i++ {
			off := int64(attrsOff + i*attrSize)
			b := make([]byte, attrSize)
			if _, err := ra.ReadAt(b, off); err != nil {
				return nil, &FormatError{Offset: off, What: "reading an attr", Err: noEOF(err)}
			}
			a, err := parseAttr(b[:attrSize-16], off)
			if err != nil {
				return nil, err
			}
			idOff, idLen := le.Uint64(b[attrSize-16:]), le.Uint64(b[attrSize-8:])
			if err := checkSection(size, off+int64(attrSize)-16, idOff, idLen); err != nil {
				return nil, err
			}
			if idLen/8 > maxIDsPerAttr {
				return nil, formatErr(off+int64(attrSize)-8, "%d sample ids for one event (at most %d)", idLen/8, maxIDsPerAttr)
			}
			ids := make([]byte, idLen/8*8)
			if _, err := ra.ReadAt(ids, int64(idOff)); err != nil {
				return nil, &FormatError{Offset: int64(idOff), What: "reading sample ids", Err: noEOF(err)}
			}
			for k := 0; k+8 <= len(ids); k += 8 {
				a.IDs = append(a.IDs, le.Uint64(ids[k:]))
			}
			r.Attrs = append(r.Attrs, a)
		}
	}
	if err := r.readFeatures(ra, size, h[72:104], dataOff+dataLen); err != nil {
		return nil, err
	}
	if err := r.indexAttrs(); err != nil {
		return nil, err
	}
	r.ra, r.pool = ra, &chunkPool{}
	r.ahead.depth = readAhead
	r.pos, r.memOff = int64(dataOff), int64(dataOff)
	return r, nil
}

// OpenBytes reads a perf.data file (or a pipe-mode stream saved to a file)
// whose bytes are all in memory, typically a read-only mapping of the file.
// Records are decoded in place: their Body and the Sample's Stack are slices
// of data (Record.InPlace), valid as long as data is, so a caller may keep
// them past the next call to Next without copying them.
func OpenBytes(data []byte) (*Reader, error) {
	r, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	r.mem, r.memOff, r.ra, r.chunk = data, 0, nil, nil
	r.src = nil
	if r.end < 0 {
		r.end = int64(len(data)) // pipe mode in a file: its records run to the end
	}
	return r, nil
}

// NewPipeReader reads a perf.data stream in pipe mode (`perf record -o -`):
// the attrs and features arrive as records, and Header fills in as they do.
func NewPipeReader(rd io.Reader) (*Reader, error) {
	r := &Reader{end: -1, src: bufio.NewReaderSize(rd, 1<<20)}
	r.Pipe = true
	var h [pipeHeaderSize]byte
	if _, err := io.ReadFull(r.src, h[:]); err != nil {
		return nil, &FormatError{Offset: 0, What: "reading the pipe header", Err: noEOF(err)}
	}
	if err := checkMagic(h[:]); err != nil {
		return nil, err
	}
	if s := le.Uint64(h[8:]); s != pipeHeaderSize {
		return nil, formatErr(8, "pipe header size %d, want %d", s, pipeHeaderSize)
	}
	r.pos = pipeHeaderSize
	r.idPos, r.idFromE = -1, -1
	return r, nil
}

func checkMagic(h []byte) error {
	switch string(h[:8]) {
	case "PERFILE2":
		return nil
	case "2ELIFREP":
		return formatErr(0, "a big-endian recording (only little-endian files are read)")
	}
	return formatErr(0, "not a perf.data file (magic %q, want \"PERFILE2\")", h[:8])
}

func checkSection(size int64, at int64, off, n uint64) error {
	if off > uint64(size) || n > uint64(size)-off {
		return formatErr(at, "section [%#x, +%#x) outside the file of %d bytes", off, n, size)
	}
	return nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// indexAttrs prepares the mapping from a record to its event: by id when the
// recording has several events.
func (r *Reader) indexAttrs() error {
	r.idPos, r.idFromE = -1, -1
	r.byID = nil
	if len(r.Attrs) < 2 {
		return nil
	}
	r.byID = map[uint64]*Attr{}
	for _, a := range r.Attrs {
		for _, id := range a.IDs {
			r.byID[id] = a
		}
	}
	st := r.Attrs[0].SampleType
	switch {
	case st&SampleIdentifier != 0:
		r.idPos, r.idFromE = 0, 0
	case st&SampleID != 0:
		r.idPos = bits.OnesCount64(st & (SampleIP | SampleTID | SampleTime | SampleAddr))
		r.idFromE = bits.OnesCount64(st & (SampleStreamID | SampleCPU))
		if st&SampleIdentifier != 0 {
			r.idFromE++
		}
	}
	return nil
}

// attrFor finds the event of a sample (sample=true) or of another record's
// trailer from the record's body.
func (r *Reader) attrFor(body []byte, sample bool) *Attr {
	if len(r.Attrs) == 0 {
		return nil
	}
	if r.byID == nil || r.idPos < 0 {
		return r.Attrs[0]
	}
	var at int
	if sample {
		at = r.idPos * 8
	} else {
		at = len(body) - (r.idFromE+1)*8
	}
	if at < 0 || at+8 > len(body) {
		return r.Attrs[0]
	}
	if a := r.byID[le.Uint64(body[at:])]; a != nil {
		return a
	}
	return r.Attrs[0]
}

func (r *Reader) readFeatures(ra io.ReaderAt, size int64, bitmap []byte, at uint64) error {
	for bit := 0; bit < featureBits; bit++ {
		if bitmap[bit/8]>>(bit%8)&1 != 0 {
			r.Features = append(r.Features, bit)
		}
	}
	for i, bit := range r.Features {
		hdrOff := int64(at) + int64(i)*16
		var sec [16]byte
		if _, err := ra.ReadAt(sec[:], hdrOff); err != nil {
			return &FormatError{Offset: hdrOff, What: fmt.Sprintf("reading feature %d's section header", bit), Err: noEOF(err)}
		}
		off, n := le.Uint64(sec[0:]), le.Uint64(sec[8:])
		if err := checkSection(size, hdrOff, off, n); err != nil {
			return err
		}
		if !wantFeature(bit) {
			continue
		}
		if n > maxSection {
			return formatErr(hdrOff, "feature %d's section of %d bytes (at most %d)", bit, n, maxSection)
		}
		b := make([]byte, n)
		if _, err := ra.ReadAt(b, int64(off)); err != nil {
			return &FormatError{Offset: int64(off), What: fmt.Sprintf("reading feature %d", bit), Err: noEOF(err)}
		}
		if err := r.parseFeature(bit, b, int64(off)); err != nil {
			return err
		}
	}
	return nil
}

func wantFeature(bit int) bool {
	switch bit {
	case FeatureBuildID, FeatureHostname, FeatureOSRelease, FeatureVersion, FeatureArch,
		FeatureNrCPUs, FeatureCmdline, FeatureEventDesc:
		return true
	}
	return false
}

// parseFeature decodes one feature section (file mode) or HEADER_FEATURE
// record body (pipe mode, without its feature id).
func (r *Reader) parseFeature(bit int, b []byte, off int64) error {
	switch bit {
	case FeatureBuildID:
		ids, err := parseBuildIDs(b, off)
		if err != nil {
			return err
		}
		r.BuildIDs = append(r.BuildIDs, ids...)
	case FeatureHostname, FeatureOSRelease, FeatureVersion, FeatureArch:
		s, _, err := perfString(b, 0, off)
		if err != nil {
			return err
		}
		switch bit {
		case FeatureHostname:
			r.Hostname = s
		case FeatureOSRelease:
			r.OSRelease = s
		case FeatureVersion:
			r.Version = s
		case FeatureArch:
			r.Arch = s
		}
	case FeatureNrCPUs:
		if len(b) < 8 {
			return formatErr(off, "nrcpus feature of %d bytes", len(b))
		}
		r.NrCPUs = le.Uint32(b[4:])
	case FeatureCmdline:
		if len(b) < 4 {
			return formatErr(off, "cmdline feature of %d bytes", len(b))
		}
		n := int(le.Uint32(b))
		p := 4
		r.Cmdline = nil
		for i := 0; i < n; i++ {
			s, next, err := perfString(b, p, off)
			if err != nil {
				return err
			}
			r.Cmdline = append(r.Cmdline, s)
			p = next
		}
	case FeatureEventDesc:
		return r.parseEventDesc(b, off)
	}
	return nil
}

// perfString decodes perf's {u32 len; char str[len]} (NUL-padded) at p.
func perfString(b []byte, p int, off int64) (string, int, error) {
	if p+4 > len(b) {
		return "", 0, formatErr(off+int64(p), "string length past the section's end")
	}
	n := int(le.Uint32(b[p:]))
	if n > len(b)-p-4 {
		return "", 0, formatErr(off+int64(p), "string of %d bytes past the section's end", n)
	}
	return cString(b[p+4 : p+4+n]), p + 4 + n, nil
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// parseEventDesc names the attrs: {u32 nr, u32 attr_size, then per event the
// attr, u32 nr_ids, a string, u64 ids[nr_ids]}.
func (r *Reader) parseEventDesc(b []byte, off int64) error {
	if len(b) < 8 {
		return formatErr(off, "event_desc of %d bytes", len(b))
	}
	nr, asz := int(le.Uint32(b)), int(le.Uint32(b[4:]))
	if asz < 8 || asz > attrMax {
		return formatErr(off+4, "event_desc attr size %d", asz)
	}
	p := 8
	for i := 0; i < nr; i++ {
		if asz > len(b)-p || len(b)-p-asz < 4 {
			return formatErr(off+int64(p), "event_desc entry %d past the section's end", i)
		}
		p += asz
		nids := int(le.Uint32(b[p:]))
		p += 4
		name, next, err := perfString(b, p, off)
		if err != nil {
			return err
		}
		p = next
		if nids > (len(b)-p)/8 {
			return formatErr(off+int64(p), "event_desc entry %d: %d ids past the section's end", i, nids)
		}
		if i < len(r.Attrs) {
			r.Attrs[i].Name = name
		}
		p += nids * 8
	}
	return nil
}

// parseBuildIDs decodes the build-id table: records of {header, s32 pid,
// u8 build_id[24], char filename[]}.
func parseBuildIDs(b []byte, off int64) ([]BuildID, error) {
	var out []BuildID
	for p := 0; p < len(b); {
		if len(b)-p < 8 {
			return out, formatErr(off+int64(p), "build-id entry header past the section's end")
		}
		misc := le.Uint16(b[p+4:])
		size := int(le.Uint16(b[p+6:]))
		if size < 8+4+24 || size > len(b)-p {
			return out, formatErr(off+int64(p), "build-id entry of %d bytes", size)
		}
		e := b[p : p+size]
		id := e[12 : 12+20]
		if misc&MiscBuildIDSize != 0 {
			if n := int(e[12+20]); n <= 20 {
				id = e[12 : 12+n]
			}
		}
		out = append(out, BuildID{
			PID:      int32(le.Uint32(e[8:])),
			Misc:     misc,
			BuildID:  append([]byte(nil), id...),
			Filename: cString(e[36:]),
		})
		p += size
	}
	return out, nil
}

var errTruncated = errors.New("record truncated")

// NewRecordReader decodes records that arrive one by one rather than in a
// file: a perf_event ring buffer read by the caller, whose events share
// attr's layout. Header stays empty but for Attrs.
func NewRecordReader(attr *Attr) *Reader {
	r := &Reader{end: -1}
	r.Attrs = []*Attr{attr}
	r.idPos, r.idFromE = -1, -1
	return r
}

// Decode decodes one whole record (header included) as Next would return
// it; the Record is valid until the next Decode or Next.
func (r *Reader) Decode(b []byte, off int64) (*Record, error) {
	if len(b) < 8 {
		return nil, formatErr(off, "record of %d bytes (less than its header)", len(b))
	}
	size := int(le.Uint16(b[6:]))
	if size < 8 || size > len(b) {
		return nil, formatErr(off, "record size %d in %d bytes", size, len(b))
	}
	if err := r.decode(le.Uint32(b), le.Uint16(b[4:]), b[8:size], off); err != nil {
		return nil, err
	}
	return &r.rec, nil
}
