package perfdata

import (
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// decompressor undoes `perf record -z`. perf compresses each ring-buffer
// chunk with ZSTD_flushStream, not ZSTD_e_end: the COMPRESSED records are
// pieces of one zstd stream, each ending on a block boundary, so everything a
// record's bytes encode can be decoded before the next record arrives. The
// streaming decoder runs on a goroutine of its own (started at the first
// COMPRESSED record, ended by Close); its input side says when it has used up
// a record's bytes, and by then it has handed out all they decode to.
type decompressor struct {
	in     chan []byte // a record's compressed bytes, to the decoder
	hungry chan struct{}
	out    chan chunk
	cur    []byte
	done   bool
}

type chunk struct {
	b   []byte
	err error
}

// Read serves the decoder the compressed bytes it is given, and says so
// when it has none left.
func (d *decompressor) Read(p []byte) (int, error) {
	for len(d.cur) == 0 {
		d.hungry <- struct{}{}
		b, ok := <-d.in
		if !ok {
			return 0, io.EOF
		}
		d.cur = b
	}
	n := copy(p, d.cur)
	d.cur = d.cur[n:]
	return n, nil
}

func (d *decompressor) start() error {
	dec, err := zstd.NewReader(d,
		zstd.WithDecoderConcurrency(1), // synchronous: output comes before the next input is asked for
		zstd.WithDecoderMaxMemory(maxDecompressed),
		zstd.WithDecoderMaxWindow(maxDecompressed))
	if err != nil {
		return err
	}
	d.in, d.hungry, d.out = make(chan []byte), make(chan struct{}), make(chan chunk)
	go func() {
		defer dec.Close()
		for {
			buf := make([]byte, 64<<10)
			n, err := dec.Read(buf)
			if n > 0 {
				d.out <- chunk{b: buf[:n]}
			}
			if err != nil {
				if err != io.EOF {
					d.out <- chunk{err: err}
				}
				close(d.out)
				return
			}
		}
	}()
	// The decoder asks for its first bytes at once.
	if _, ok := <-d.hungry; !ok {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// decode feeds one record's compressed bytes and appends what they decode
// to dst, up to limit bytes.
func (d *decompressor) decode(src, dst []byte, limit int) ([]byte, error) {
	if d.done {
		return nil, errors.New("the zstd stream already ended")
	}
	if d.in == nil {
		if err := d.start(); err != nil {
			return nil, err
		}
	}
	d.in <- src
	for {
		select {
		case c, ok := <-d.out:
			if !ok {
				d.done = true
				return dst, nil
			}
			if c.err != nil {
				d.done = true
				return nil, c.err
			}
			if len(dst)+len(c.b) > limit {
				d.close()
				return nil, fmt.Errorf("a compressed block expands past %d bytes", limit)
			}
			dst = append(dst, c.b...)
		case <-d.hungry:
			return dst, nil
		}
	}
}

// close ends the decoder's goroutine.
func (d *decompressor) close() {
	if d.in == nil || d.done {
		return
	}
	d.done = true
	close(d.in)
	for {
		select {
		case _, ok := <-d.out:
			if !ok {
				return
			}
		case <-d.hungry:
		}
	}
}

// inflater hands out the records of one decompressed block.
type inflater struct {
	data  []byte // carried-over bytes of a split record, then the block
	p     int
	carry []byte
	at    int64 // offset of the COMPRESSED record the block came from
	buf   []byte
}

// startInflate decompresses a COMPRESSED (or COMPRESSED2) record's payload
// and prepares to hand out the records in it.
func (r *Reader) startInflate(rec *Record) error {
	payload := rec.Body
	if rec.Type == RecordCompressed2 {
		if len(payload) < 8 {
			return formatErr(rec.Offset, "compressed record of %d bytes", len(payload))
		}
		n := le.Uint64(payload)
		if n > uint64(len(payload)-8) {
			return formatErr(rec.Offset, "compressed data of %d bytes in a record of %d", n, len(payload))
		}
		payload = payload[8 : 8+n]
	}
	in := r.inflateState()
	in.buf = append(in.buf[:0], in.carry...)
	out, err := r.compress.decode(payload, in.buf, maxDecompressed)
	if err != nil {
		return &FormatError{Offset: rec.Offset, What: "decompressing a zstd block", Err: err}
	}
	in.buf = out
	in.data, in.p, in.at = out, 0, rec.Offset
	in.carry = in.carry[:0]
	r.inflate = in
	return nil
}

// inflateState returns the reader's one inflater, kept for its buffers.
func (r *Reader) inflateState() *inflater {
	if r.spare == nil {
		r.spare = &inflater{}
	}
	return r.spare
}

// next returns the block's next whole record, or io.EOF when the rest (if
// any) is the start of a record that continues in the next block.
func (in *inflater) next(r *Reader) (*Record, error) {
	rest := in.data[in.p:]
	if len(rest) < 8 {
		in.carry = append(in.carry[:0], rest...)
		return nil, io.EOF
	}
	size := int(le.Uint16(rest[6:]))
	if size < 8 {
		return nil, formatErr(in.at, "a record of size %d inside the compressed block (at %d)", size, in.p)
	}
	if size > len(rest) {
		in.carry = append(in.carry[:0], rest...)
		return nil, io.EOF
	}
	if err := r.decode(le.Uint32(rest), le.Uint16(rest[4:]), rest[8:size], in.at); err != nil {
		return nil, err
	}
	if r.rec.Type == RecordCompressed || r.rec.Type == RecordCompressed2 || r.rec.Type == RecordAuxtrace {
		return nil, fmt.Errorf("perfdata: offset %#x: a record of type %d inside a compressed block", in.at, r.rec.Type)
	}
	in.p += size
	return &r.rec, nil
}

// Close ends the decompressing goroutine a `perf record -z` recording
// started. It does not close the input.
func (r *Reader) Close() error {
	r.compress.close()
	r.ahead.end()
	return nil
}
