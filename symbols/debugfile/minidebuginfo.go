package debugfile

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"
)

// DefaultMiniDebugInfoLimit bounds the decompressed size of .gnu_debugdata.
// Fedora's MiniDebugInfo for large libraries decompresses to a few MB.
const DefaultMiniDebugInfoLimit = 64 << 20

// maxDictSize is the largest LZMA2 dictionary we let the decoder allocate:
// 64 MiB is what `xz -9` uses; a header claiming more is hostile or broken.
const maxDictSize = 64 << 20

// maxMiniDebugInfoCompressed bounds the compressed section read into memory.
const maxMiniDebugInfoCompressed = 64 << 20

// OpenMiniDebugInfo decodes f's .gnu_debugdata section (MiniDebugInfo: an
// xz-compressed ELF file holding the function symbols a stripped binary lost)
// into an in-memory *elf.File. As gdb does, only its symbol table is meant to
// be used. It returns nil and no error when f has no .gnu_debugdata. limit
// bounds the decompressed size (<= 0 means DefaultMiniDebugInfoLimit).
func OpenMiniDebugInfo(f *elf.File, limit int64) (*elf.File, error) {
	s := f.Section(".gnu_debugdata")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if s.Size > maxMiniDebugInfoCompressed {
		return nil, &FormatError{What: ".gnu_debugdata", Msg: fmt.Sprintf("section size %d exceeds %d bytes", s.Size, maxMiniDebugInfoCompressed)}
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("read .gnu_debugdata: %w", err)
	}
	return DecodeMiniDebugInfo(data, limit)
}

// DecodeMiniDebugInfo decompresses an xz stream holding an ELF file and
// parses it. Before decoding, it reads the stream's index and block headers
// to check that the declared uncompressed size fits in limit and that no
// block asks for a dictionary above 64 MiB, so a hostile stream cannot make
// the decoder allocate without bound; the decoder's output is capped as well.
func DecodeMiniDebugInfo(xzData []byte, limit int64) (*elf.File, error) {
	if limit <= 0 {
		limit = DefaultMiniDebugInfoLimit
	}
	size, err := checkXZ(xzData, limit)
	if err != nil {
		return nil, err
	}
	r, err := xz.ReaderConfig{SingleStream: true}.NewReader(bytes.NewReader(xzData))
	if err != nil {
		return nil, &FormatError{What: "xz stream", Msg: err.Error()}
	}
	out := make([]byte, 0, size)
	buf := bytes.NewBuffer(out)
	n, err := io.Copy(buf, io.LimitReader(r, limit+1))
	if err != nil {
		return nil, &FormatError{What: "xz stream", Offset: n, Msg: "decompression failed: " + err.Error()}
	}
	if n > limit {
		return nil, fmt.Errorf("xz stream: %w (%d bytes)", ErrTooLarge, limit)
	}
	if uint64(n) != size {
		return nil, &FormatError{What: "xz stream", Offset: n, Msg: fmt.Sprintf("decompressed %d bytes, index says %d", n, size)}
	}
	ef, err := newELF(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("embedded ELF: %w", err)
	}
	return ef, nil
}

// newELF parses an in-memory ELF image. debug/elf is fuzzed upstream, but a
// panic on hostile bytes must not take the debugger down, so it is turned
// into an error here.
func newELF(data []byte) (f *elf.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("malformed ELF (parser panic: %v)", r)
		}
	}()
	return elf.NewFile(bytes.NewReader(data))
}

// xz container constants (xz file format 1.0.4).
var (
	xzHeaderMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0}
	xzFooterMagic = []byte{'Y', 'Z'}
)

const (
	xzStreamHeaderLen = 12
	xzStreamFooterLen = 12
	xzFilterLZMA2     = 0x21
	maxXZBlocks       = 1 << 16
)

func xzErr(off int, format string, args ...any) error {
	return &FormatError{What: "xz stream", Offset: int64(off), Msg: fmt.Sprintf(format, args...)}
}

// checkXZ validates the layout of a single xz stream without decompressing
// it: header and footer magic, the index (found through the footer's
// backward size), and each block header's LZMA2 dictionary size. It returns
// the total uncompressed size the index declares.
func checkXZ(data []byte, limit int64) (uint64, error) {
	if len(data) < xzStreamHeaderLen+xzStreamFooterLen {
		return 0, xzErr(0, "%d bytes is too short for an xz stream", len(data))
	}
	if !bytes.Equal(data[:6], xzHeaderMagic) {
		return 0, xzErr(0, "bad header magic")
	}
	foot := len(data) - xzStreamFooterLen
	if !bytes.Equal(data[foot+10:], xzFooterMagic) {
		return 0, xzErr(foot+10, "bad footer magic (trailing data or a truncated stream)")
	}
	backward := (uint64(le32(data[foot+4:])) + 1) * 4
	if backward > uint64(foot-xzStreamHeaderLen) {
		return 0, xzErr(foot+4, "index size %d exceeds the stream", backward)
	}
	idxOff := foot - int(backward)
	idx := data[idxOff:foot]
	if idx[0] != 0 {
		return 0, xzErr(idxOff, "index indicator is %#x, not 0", idx[0])
	}
	p := 1
	count, n := xzVarint(idx[p:])
	if n == 0 {
		return 0, xzErr(idxOff+p, "bad record count")
	}
	p += n
	if count > maxXZBlocks {
		return 0, xzErr(idxOff+1, "%d blocks is more than the %d accepted", count, maxXZBlocks)
	}
	var total uint64
	blockOff := uint64(xzStreamHeaderLen)
	for i := uint64(0); i < count; i++ {
		unpadded, n1 := xzVarint(idx[p:])
		if n1 == 0 {
			return 0, xzErr(idxOff+p, "bad unpadded size in index record %d", i)
		}
		p += n1
		usize, n2 := xzVarint(idx[p:])
		if n2 == 0 {
			return 0, xzErr(idxOff+p, "bad uncompressed size in index record %d", i)
		}
		p += n2
		if usize > uint64(limit) || total+usize > uint64(limit) {
			return 0, fmt.Errorf("xz stream: %w: declared uncompressed size exceeds %d bytes", ErrTooLarge, limit)
		}
		total += usize
		if blockOff >= uint64(idxOff) {
			return 0, xzErr(int(blockOff), "block %d starts inside the index", i)
		}
		if err := checkXZBlockHeader(data[blockOff:idxOff], int(blockOff)); err != nil {
			return 0, err
		}
		padded := roundUp(unpadded, 4)
		if unpadded == 0 || padded > uint64(idxOff)-blockOff {
			return 0, xzErr(idxOff+p, "block %d size %d runs past the index", i, unpadded)
		}
		blockOff += padded
	}
	if blockOff != uint64(idxOff) {
		return 0, xzErr(int(blockOff), "blocks end at %#x but the index starts at %#x", blockOff, idxOff)
	}
	return total, nil
}

// checkXZBlockHeader checks that a block uses only the LZMA2 filter with a
// dictionary of at most maxDictSize (the decoder allocates the dictionary
// the header asks for before reading any data).
func checkXZBlockHeader(b []byte, off int) error {
	if len(b) < 2 || b[0] == 0 {
		return xzErr(off, "missing block header")
	}
	hlen := (int(b[0]) + 1) * 4
	if hlen > len(b) {
		return xzErr(off, "block header of %d bytes is truncated", hlen)
	}
	h := b[:hlen]
	flags := h[1]
	nfilters := int(flags&3) + 1
	p := 2
	if flags&0x40 != 0 { // compressed size present
		_, n := xzVarint(h[p:])
		if n == 0 {
			return xzErr(off+p, "bad compressed size in block header")
		}
		p += n
	}
	if flags&0x80 != 0 { // uncompressed size present
		_, n := xzVarint(h[p:])
		if n == 0 {
			return xzErr(off+p, "bad uncompressed size in block header")
		}
		p += n
	}
	for i := 0; i < nfilters; i++ {
		id, n := xzVarint(h[p:])
		if n == 0 {
			return xzErr(off+p, "bad filter id")
		}
		p += n
		psize, n := xzVarint(h[p:])
		if n == 0 || psize > uint64(len(h)-p-n) {
			return xzErr(off+p, "bad filter properties size")
		}
		p += n
		if id != xzFilterLZMA2 || psize != 1 {
			return xzErr(off+p, "filter %#x is not supported (only LZMA2)", id)
		}
		bits := h[p]
		if bits > 40 {
			return xzErr(off+p, "LZMA2 dictionary code %d out of range", bits)
		}
		var dict uint64
		if bits == 40 {
			dict = 1<<32 - 1
		} else {
			dict = uint64(2|bits&1) << (bits/2 + 11)
		}
		if dict > maxDictSize {
			return xzErr(off+p, "LZMA2 dictionary of %d bytes exceeds %d", dict, maxDictSize)
		}
		p++
	}
	return nil
}

// xzVarint decodes an xz multibyte integer (7 bits per byte, at most 9
// bytes). It returns n == 0 when the encoding is truncated or invalid.
func xzVarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 9; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if i > 0 && b[i] == 0 {
				return 0, 0 // non-minimal encoding is invalid
			}
			return v, i + 1
		}
	}
	return 0, 0
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
