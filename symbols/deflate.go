package symbols

// A DEFLATE (RFC 1951) decoder for whole buffers: the stream and the output
// are both in memory and the output's size is known (the section header
// says it), so back-references copy within the output itself. A streaming
// inflater (compress/flate, klauspost's) decodes into a 32 KiB window and
// copies every byte out of it again; on libc's debug sections that copy and
// the reader interfaces were half of the inflation's CPU. The first run of
// `sonde stack` on a machine spends most of its time here.
//
// Bad input is an error, never a panic or a loop: every symbol either
// writes output (bounded by the buffer), ends a block, or fails, and reading
// past the end of the input fails once the zero bits it pads with are used.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
)

var (
	errDeflateEOF     = errors.New("deflate stream ends early")
	errDeflateCorrupt = errors.New("corrupt deflate stream")
)

// Huffman tables decode the low primaryBits of the bit buffer in one
// lookup; longer codes (rare by construction: each is used less than once
// in 2^primaryBits symbols) are decoded bit by bit from the canonical code.
const (
	litPrimary  = 10
	distPrimary = 8
	maxCodeLen  = 15
)

// huffman is one canonical Huffman code. An entry of table holds the code
// length in its low 8 bits, flags above, and a value in the high 16 bits:
// for a code-length code the symbol; for a literal/length code a literal
// byte (entLiteral), the end of block (entEnd), or a match length's base
// with its count of extra bits (entExtra); for a distance code the
// distance's base and extra bits likewise. Symbols the format reserves
// (length 286-287, distance 30-31) are marked entInvalid. An entry of 0
// means the code is longer than the table (or unused): decode slowly.
// Doing the base and extra-bit lookups when the table is built takes them
// out of the decoding loop.
type huffman struct {
	table   [1 << litPrimary]uint32 // the first 1<<primary entries are used
	primary uint
	count   [maxCodeLen + 1]uint16 // codes of each length
	symbols []uint16               // in canonical order (by length, then symbol)
}

// Table entry fields (see huffman).
const (
	entLenMask = 0xff
	entExtra   = 0x1f << 8 // extra bits of a length or distance
	entInvalid = 1 << 13
	entEnd     = 1 << 14
	entLiteral = 1 << 15
)

// What the symbols of a code stand for, for its table's entries.
type codeKind uint8

const (
	plainCode  codeKind = iota // entries hold the symbol (code lengths)
	litLenCode                 // literals, end of block, match lengths
	distCode                   // match distances
)

// entry returns the table entry of symbol sym of a kind code with a code
// of l bits.
func entry(kind codeKind, sym int, l int) uint32 {
	e := uint32(l)
	switch {
	case kind == plainCode:
		return e | uint32(sym)<<16
	case kind == litLenCode && sym < 256:
		return e | entLiteral | uint32(sym)<<16
	case kind == litLenCode && sym == 256:
		return e | entEnd
	case kind == litLenCode && sym-257 < len(lengthBase):
		return e | uint32(lengthExtra[sym-257])<<8 | uint32(lengthBase[sym-257])<<16
	case kind == distCode && sym < len(distBase):
		return e | uint32(distExtra[sym])<<8 | distBase[sym]<<16
	}
	return e | entInvalid
}

// build makes the code for lengths (0: symbol unused). An over-subscribed
// set of lengths is an error; an incomplete one is allowed (a stream that
// uses a missing code fails when it does).
func (h *huffman) build(lengths []uint8, primary uint, kind codeKind) error {
	h.primary = primary
	clear(h.table[:1<<primary])
	h.count = [maxCodeLen + 1]uint16{}
	for _, l := range lengths {
		h.count[l]++
	}
	h.count[0] = 0
	left := 1
	for l := 1; l <= maxCodeLen; l++ {
		left = left<<1 - int(h.count[l])
		if left < 0 {
			return fmt.Errorf("%w: over-subscribed Huffman code", errDeflateCorrupt)
		}
	}
	var offs [maxCodeLen + 2]uint16
	for l := 1; l <= maxCodeLen; l++ {
		offs[l+1] = offs[l] + h.count[l]
	}
	if n := int(offs[maxCodeLen+1]); cap(h.symbols) < n {
		h.symbols = make([]uint16, n)
	} else {
		h.symbols = h.symbols[:n]
	}
	for sym, l := range lengths {
		if l != 0 {
			h.symbols[offs[l]] = uint16(sym)
			offs[l]++
		}
	}
	// Canonical codes in order, filled into the table bit-reversed (deflate
	// sends Huffman codes most significant bit first).
	code, i := 0, 0
	for l := 1; l <= maxCodeLen; l++ {
		for n := 0; n < int(h.count[l]); n++ {
			if uint(l) <= primary {
				r := int(bits.Reverse16(uint16(code)) >> (16 - l))
				e := entry(kind, int(h.symbols[i]), l)
				for k := r; k < 1<<primary; k += 1 << l {
					h.table[k] = e
				}
			}
			code++
			i++
		}
		code <<= 1
	}
	return nil
}

// inflater is the state of one decoding: input, bit buffer, output.
type inflater struct {
	in    []byte
	pos   int    // next input byte to load into bits
	bits  uint64 // bit buffer, least significant first
	nbits uint
	pad   int // zero bytes loaded past the end of the input
	out   []byte
	o     int // bytes written

	lit, dist, clen huffman
	lens            [286 + 30]uint8
}

// refill loads whole bytes until at least 56 bits are buffered.
func (f *inflater) refill() {
	if f.pos+8 <= len(f.in) {
		f.bits |= binary.LittleEndian.Uint64(f.in[f.pos:]) << f.nbits
		f.pos += int(63-f.nbits) >> 3
		f.nbits |= 56
		return
	}
	for f.nbits <= 56 {
		if f.pos < len(f.in) {
			f.bits |= uint64(f.in[f.pos]) << f.nbits
			f.pos++
		} else {
			f.pad++ // zeros: an error once they are consumed (overrun)
		}
		f.nbits += 8
	}
}

// overrun reports whether more bits were consumed than the input has.
func (f *inflater) overrun() bool { return int(f.nbits) < 8*f.pad }

// take removes n (≤ 32) bits from the buffer, which must hold them.
func (f *inflater) take(n uint) uint32 {
	v := uint32(f.bits & (1<<n - 1))
	f.bits >>= n
	f.nbits -= n
	return v
}

// need makes sure n bits are buffered (n ≤ 56), failing on an overrun.
func (f *inflater) need(n uint) error {
	if f.nbits < n {
		f.refill()
		if f.pad > 64 {
			return errDeflateEOF
		}
	}
	return nil
}

// decode reads one symbol of h, a plainCode; the buffer must hold 15 bits.
func (f *inflater) decode(h *huffman) (int, error) {
	if e := h.table[f.bits&(1<<h.primary-1)&(1<<litPrimary-1)]; e != 0 {
		l := uint(e & entLenMask)
		f.bits >>= l
		f.nbits -= l
		return int(e >> 16), nil
	}
	return f.decodeSlow(h)
}

// decodeSlow reads one symbol of h whose code is longer than its table:
// it walks the canonical code one bit at a time (puff.c).
func (f *inflater) decodeSlow(h *huffman) (int, error) {
	code, first, index := 0, 0, 0
	for l := 1; l <= maxCodeLen; l++ {
		code |= int(f.take(1))
		count := int(h.count[l])
		if code-first < count {
			return int(h.symbols[index+code-first]), nil
		}
		index += count
		first = (first + count) << 1
		code <<= 1
	}
	return 0, fmt.Errorf("%w: invalid Huffman code", errDeflateCorrupt)
}

// Base values and extra bits of length symbols 257..285 and of distance
// symbols 0..29 (RFC 1951 3.2.5).
var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint32{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// fixedCodes are the literal/length and distance codes of fixed-Huffman
// blocks (RFC 1951 3.2.6).
var fixedCodes = sync.OnceValue(func() *[2]huffman {
	var h [2]huffman
	var l [288]uint8
	for i := range l {
		switch {
		case i < 144:
			l[i] = 8
		case i < 256:
			l[i] = 9
		case i < 280:
			l[i] = 7
		default:
			l[i] = 8
		}
	}
	h[0].build(l[:], litPrimary, litLenCode)
	var d [30]uint8
	for i := range d {
		d[i] = 5
	}
	h[1].build(d[:], distPrimary, distCode)
	return &h
})

// inflateRaw decodes the DEFLATE stream at the start of in into out, which
// it must fill exactly; it returns the number of input bytes the stream
// took (up to its last whole byte).
func inflateRaw(in, out []byte) (int, error) {
	f := &inflater{in: in, out: out}
	for {
		if err := f.need(3); err != nil {
			return 0, err
		}
		final := f.take(1)
		var err error
		switch f.take(2) {
		case 0:
			err = f.stored()
		case 1:
			fc := fixedCodes()
			err = f.codes(&fc[0], &fc[1])
		case 2:
			if err = f.dynamic(); err == nil {
				err = f.codes(&f.lit, &f.dist)
			}
		default:
			err = fmt.Errorf("%w: block type 3", errDeflateCorrupt)
		}
		if err == nil && f.overrun() {
			err = errDeflateEOF
		}
		if err != nil {
			return 0, err
		}
		if final == 1 {
			break
		}
	}
	if f.o != len(out) {
		return 0, errSizeMismatch
	}
	f.alignBytes()
	return f.pos, nil
}

// alignBytes drops the bits up to the next byte boundary and returns the
// whole bytes still buffered to the input.
func (f *inflater) alignBytes() {
	f.take(f.nbits & 7)
	back := int(f.nbits/8) - f.pad
	f.pos -= back
	f.bits, f.nbits, f.pad = 0, 0, 0
}

// stored copies a stored block.
func (f *inflater) stored() error {
	if f.overrun() {
		return errDeflateEOF
	}
	f.alignBytes()
	if f.pos+4 > len(f.in) {
		return errDeflateEOF
	}
	n := int(binary.LittleEndian.Uint16(f.in[f.pos:]))
	if ^uint16(n) != binary.LittleEndian.Uint16(f.in[f.pos+2:]) {
		return fmt.Errorf("%w: stored block length check", errDeflateCorrupt)
	}
	f.pos += 4
	if f.pos+n > len(f.in) {
		return errDeflateEOF
	}
	if f.o+n > len(f.out) {
		return errSizeMismatch
	}
	copy(f.out[f.o:], f.in[f.pos:f.pos+n])
	f.o += n
	f.pos += n
	return nil
}

// clenOrder is the order code length code lengths are sent in.
var clenOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// dynamic reads a dynamic block's code definitions into f.lit and f.dist.
func (f *inflater) dynamic() error {
	if err := f.need(14); err != nil {
		return err
	}
	nlit := int(f.take(5)) + 257
	ndist := int(f.take(5)) + 1
	nclen := int(f.take(4)) + 4
	if nlit > 286 || ndist > 30 {
		return fmt.Errorf("%w: %d literal/length and %d distance codes", errDeflateCorrupt, nlit, ndist)
	}
	var cl [19]uint8
	for i := 0; i < nclen; i++ {
		if err := f.need(3); err != nil {
			return err
		}
		cl[clenOrder[i]] = uint8(f.take(3))
	}
	if err := f.clen.build(cl[:], 7, plainCode); err != nil {
		return err
	}
	lens := f.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		if err := f.need(maxCodeLen + 7); err != nil {
			return err
		}
		sym, err := f.decode(&f.clen)
		if err != nil {
			return err
		}
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return fmt.Errorf("%w: repeat with no previous length", errDeflateCorrupt)
			}
			v, rep = lens[i-1], 3+int(f.take(2))
		case 17:
			rep = 3 + int(f.take(3))
		default:
			rep = 11 + int(f.take(7))
		}
		if i+rep > len(lens) {
			return fmt.Errorf("%w: code lengths overflow", errDeflateCorrupt)
		}
		for ; rep > 0; rep-- {
			lens[i] = v
			i++
		}
	}
	if lens[256] == 0 {
		return fmt.Errorf("%w: no end-of-block code", errDeflateCorrupt)
	}
	if err := f.lit.build(lens[:nlit], litPrimary, litLenCode); err != nil {
		return err
	}
	return f.dist.build(lens[nlit:], distPrimary, distCode)
}

// codes decodes a Huffman-coded block with literal/length code lit and
// distance code dist (built with litPrimary and distPrimary bits: the
// tables are indexed with those masks). The bit buffer and output position
// live in locals here (the loop is most of the decoder's time); the rare
// long codes and the refill near the end of the input go through f.
func (f *inflater) codes(lit, dist *huffman) error {
	in, out := f.in, f.out
	pos, o := f.pos, f.o
	bitbuf, nbits := f.bits, f.nbits
	save := func() { f.pos, f.o, f.bits, f.nbits = pos, o, bitbuf, nbits }
	load := func() { pos, o, bitbuf, nbits = f.pos, f.o, f.bits, f.nbits }
	defer save()
	// refill tops the buffer up to at least 56 bits. It only adds bits
	// above those buffered, so a table entry looked up before stays valid.
	refill := func() bool {
		if pos+8 <= len(in) {
			bitbuf |= binary.LittleEndian.Uint64(in[pos:]) << nbits
			pos += int(63-nbits) >> 3
			nbits |= 56
			return true
		}
		save()
		f.refill()
		load()
		return f.pad <= 64
	}
	for {
		// A length and a distance with their extra bits take at most 48.
		if nbits < 48 && !refill() {
			return errDeflateEOF
		}
		e := lit.table[bitbuf&(1<<litPrimary-1)]
		if e == 0 {
			// A code longer than the table: its entry made on the fly.
			save()
			sym, err := f.decodeSlow(lit)
			load()
			if err != nil {
				return err
			}
			e = entry(litLenCode, sym, 0)
		}
		if e&entLiteral != 0 {
			// Literals, most symbols: up to three from the bits buffered
			// (a code in the table takes at most litPrimary bits).
			for k := 0; ; k++ {
				l := uint(e & entLenMask)
				bitbuf >>= l
				nbits -= l
				if o >= len(out) {
					return errSizeMismatch
				}
				out[o] = byte(e >> 16)
				o++
				e = lit.table[bitbuf&(1<<litPrimary-1)]
				if k == 2 || e&entLiteral == 0 || e == 0 {
					break
				}
			}
			if e&entLiteral != 0 || e == 0 {
				continue
			}
			if nbits < 48 && !refill() {
				return errDeflateEOF
			}
		}
		if e&(entEnd|entInvalid) != 0 {
			if e&entInvalid != 0 {
				return fmt.Errorf("%w: length symbol 286 or 287", errDeflateCorrupt)
			}
			l := uint(e & entLenMask)
			bitbuf >>= l
			nbits -= l
			return nil
		}
		l := uint(e & entLenMask)
		bitbuf >>= l
		nbits -= l
		eb := uint(e&entExtra) >> 8
		n := int(e>>16) + int(bitbuf&(1<<eb-1))
		bitbuf >>= eb
		nbits -= eb
		e = dist.table[bitbuf&(1<<distPrimary-1)]
		if e == 0 {
			save()
			sym, err := f.decodeSlow(dist)
			load()
			if err != nil {
				return err
			}
			e = entry(distCode, sym, 0)
		}
		if e&entInvalid != 0 {
			return fmt.Errorf("%w: distance symbol 30 or 31", errDeflateCorrupt)
		}
		l = uint(e & entLenMask)
		bitbuf >>= l
		nbits -= l
		eb = uint(e&entExtra) >> 8
		d := int(e>>16) + int(bitbuf&(1<<eb-1))
		bitbuf >>= eb
		nbits -= eb
		if d > o {
			return fmt.Errorf("%w: distance %d before the start of the output", errDeflateCorrupt, d)
		}
		if n > len(out)-o {
			return errSizeMismatch
		}
		if len(out)-o >= n+8 {
			// Room for stores of 8 bytes that run up to 7 bytes past the
			// copy, into output not written yet.
			switch {
			case d >= 8:
				// Each 8 bytes read are final already.
				for i := 0; i < n; i += 8 {
					binary.LittleEndian.PutUint64(out[o+i:], binary.LittleEndian.Uint64(out[o-d+i:]))
				}
			case d == 1:
				// A run of one byte (zeros, mostly).
				v := uint64(out[o-1]) * 0x0101010101010101
				for i := 0; i < n; i += 8 {
					binary.LittleEndian.PutUint64(out[o+i:], v)
				}
			default:
				// A pattern of 2-7 bytes: each store's first d bytes are
				// final; the next store starts after them.
				for i := 0; i < n; i += d {
					binary.LittleEndian.PutUint64(out[o+i:], binary.LittleEndian.Uint64(out[o-d+i:]))
				}
			}
			o += n
			continue
		}
		o = copyMatchEnd(out, o, d, n)
	}
}

// copyMatchEnd copies a match of n bytes at distance d to out[o:] where
// out has no room for copies 8 bytes at a time, and returns o+n.
func copyMatchEnd(out []byte, o, d, n int) int {
	if d >= n {
		copy(out[o:o+n], out[o-d:o-d+n])
		return o + n
	}
	// Overlapping: the pattern of d bytes repeats; copy in growing chunks,
	// each a whole number of repetitions.
	src, end := o-d, o+n
	for o < end {
		o += copy(out[o:end], out[src:o])
	}
	return o
}

// inflateZlibInto decodes a zlib stream (RFC 1950) into out, which it must
// fill exactly, and checks its Adler-32 checksum.
func inflateZlibInto(body, out []byte) error {
	if len(body) < 2 {
		return errDeflateEOF
	}
	cmf, flg := body[0], body[1]
	if cmf&0x0f != 8 || cmf>>4 > 7 || (uint16(cmf)<<8|uint16(flg))%31 != 0 {
		return errors.New("zlib: invalid header")
	}
	if flg&0x20 != 0 {
		return errors.New("zlib: preset dictionary")
	}
	n, err := inflateRaw(body[2:], out)
	if err != nil {
		return err
	}
	rest := body[2+n:]
	if len(rest) < 4 {
		return errDeflateEOF
	}
	if binary.BigEndian.Uint32(rest) != adlerSum(out) {
		return errors.New("zlib: invalid checksum")
	}
	return nil
}
