package symbols

// Compressed debug sections (SHF_COMPRESSED with ELFCOMPRESS_ZLIB or
// ELFCOMPRESS_ZSTD, and GNU .zdebug_*) are decoded here, with
// github.com/klauspost/compress rather than the standard library, into
// buffers of the size the headers declare. A cold `sonde stack` spent most
// of its CPU inflating libc's debug file (3.8 MB of zlib streams to 10 MB);
// klauspost's inflater takes ~20% less CPU on those streams, and half of
// what remained was page faults writing fresh memory, which large sections
// avoid by living in huge pages (sectionBuffer). A stream must produce
// exactly the declared size: a header that lies is an error, not a short
// or regrown section.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// ELF compression types (Elf64_Chdr.ch_type).
const (
	elfCompressZlib = 1
	elfCompressZstd = 2
)

// chdrSize is sizeof(Elf64_Chdr): type, reserved, size, alignment.
const chdrSize = 24

// errSizeMismatch: a stream decoded to a size other than its header's.
var errSizeMismatch = errors.New("decoded size differs from the header's")

// decompressSHF decodes an SHF_COMPRESSED section's bytes (Elf64_Chdr then
// the stream), bounded by limit, into a buffer from alloc.
func decompressSHF(raw []byte, limit uint64, alloc func(uint64) []byte) ([]byte, error) {
	if len(raw) < chdrSize {
		return nil, fmt.Errorf("compression header: %d bytes, want %d", len(raw), chdrSize)
	}
	typ := binary.LittleEndian.Uint32(raw)
	size := binary.LittleEndian.Uint64(raw[8:])
	if size > limit {
		return nil, fmt.Errorf("claimed size %d is too large", size)
	}
	body := raw[chdrSize:]
	switch typ {
	case elfCompressZlib:
		return inflateZlib(body, size, alloc)
	case elfCompressZstd:
		return decodeZstd(body, size, alloc)
	}
	return nil, fmt.Errorf("unknown compression type %d", typ)
}

// inflateZlib decodes a zlib stream that must expand to exactly size bytes
// (its Adler-32 checksum verified).
func inflateZlib(body []byte, size uint64, alloc func(uint64) []byte) ([]byte, error) {
	// A deflate stream expands at most ~1032:1; a claim beyond that is a lie
	// we need not allocate for.
	if size > uint64(len(body))*1040+64 {
		return nil, fmt.Errorf("claimed size %d for a %d-byte zlib stream: %w", size, len(body), errSizeMismatch)
	}
	out := alloc(size)
	if err := inflateZlibInto(body, out); err != nil { // deflate.go
		return nil, err
	}
	return out, nil
}

// decodeZstd decodes zstd frames that must expand to exactly size bytes.
func decodeZstd(body []byte, size uint64, alloc func(uint64) []byte) ([]byte, error) {
	// A decoder per section, bounded by this section's size (rounded up to
	// a power of two: a frame's window may exceed its content), so a frame
	// that decodes to far more fails instead of growing the buffer.
	bound := uint64(1) << bits.Len64(max(size, 1<<10))
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(bound), zstd.WithDecoderMaxWindow(bound))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	// zstd's best ratio is bounded too (a block of 128 KiB from a few bytes:
	// RLE); be generous, the frame headers bound the output as well.
	if size > uint64(len(body))*(128<<10)+64 {
		return nil, fmt.Errorf("claimed size %d for a %d-byte zstd stream: %w", size, len(body), errSizeMismatch)
	}
	out, err := dec.DecodeAll(body, alloc(size)[:0])
	if err != nil {
		return nil, err
	}
	if uint64(len(out)) != size {
		return nil, errSizeMismatch
	}
	return out, nil
}

// heapBuffer allocates a section's buffer on the Go heap.
func heapBuffer(size uint64) []byte { return make([]byte, size) }

// hugeBufferMin: sections at least this large are inflated into memory of
// their own, mapped with transparent huge pages where the kernel offers
// them. Writing 10 MB of fresh heap costs ~2,500 page faults, which took as
// much CPU as the inflation itself on the project's VM; with 2 MB pages the
// same inflation of libc's debug file took 40% less CPU (70 ms against
// 120 ms, median of 8 runs each).
const hugeBufferMin = 1 << 20

// sectionBuffer returns a zeroed buffer of size bytes for an inflated
// section of e: a private anonymous mapping for large sections (unmapped
// by close, like the mapped file itself), the heap for small ones or when
// mapping fails.
func (e *elfFile) sectionBuffer(size uint64) []byte {
	if size < hugeBufferMin || size > maxSectionSize {
		return heapBuffer(size)
	}
	n := (size + hugePage - 1) &^ (hugePage - 1)
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return heapBuffer(size)
	}
	unix.Madvise(b, unix.MADV_HUGEPAGE) // advice only: without THP, 4 KiB pages
	e.anonMu.Lock()
	e.anon = append(e.anon, b)
	e.anonMu.Unlock()
	return b[:size:size]
}

const hugePage = 2 << 20

// unmapBuffers releases the mappings sectionBuffer made; the sections in
// them must no longer be used (as with the mapped file).
func (e *elfFile) unmapBuffers() {
	e.anonMu.Lock()
	bufs := e.anon
	e.anon = nil
	e.anonMu.Unlock()
	for _, b := range bufs {
		unix.Munmap(b)
	}
}
