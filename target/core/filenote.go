package core

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// FileMapping is one entry of the NT_FILE note: a file mapped into the process.
type FileMapping struct {
	Start  uint64
	End    uint64
	Offset uint64 // file offset of Start, in bytes
	Path   string
}

// ParseFileNote decodes an NT_FILE descriptor: a count, a page size, count
// (start, end, offset in pages) triples, then count NUL-terminated paths. It
// returns the complete entries it could read and a *NoteError for the first
// problem: a count larger than the descriptor can hold, an entry whose end is
// before its start or whose offset overflows, missing paths.
func ParseFileNote(desc []byte) ([]FileMapping, error) {
	le := binary.LittleEndian
	bad := func(format string, args ...any) error {
		return &NoteError{Type: NT_FILE, Msg: fmt.Sprintf(format, args...)}
	}
	if len(desc) < 16 {
		return nil, bad("descriptor has %d bytes, the header needs 16", len(desc))
	}
	count := le.Uint64(desc[0:])
	pageSize := le.Uint64(desc[8:])
	// The kernel writes the page size and offsets in pages; gdb writes a page
	// size of 1 and byte offsets. Either way offset*pageSize is the byte offset.
	if pageSize == 0 {
		return nil, bad("page size is 0")
	}
	rest := uint64(len(desc) - 16)
	if count > rest/24 {
		return nil, bad("%d entries need %d bytes, the descriptor has %d after its header", count, count*24, rest)
	}
	out := make([]FileMapping, 0, count)
	names := desc[16+count*24:]
	for i := uint64(0); i < count; i++ {
		e := desc[16+i*24:]
		start, end, pg := le.Uint64(e), le.Uint64(e[8:]), le.Uint64(e[16:])
		if end < start {
			return out, bad("entry %d: end 0x%x is before start 0x%x", i, end, start)
		}
		hi, off := bits.Mul64(pg, pageSize)
		if hi != 0 {
			return out, bad("entry %d: file offset %d pages of %d bytes overflows", i, pg, pageSize)
		}
		j := bytes.IndexByte(names, 0)
		if j < 0 {
			return out, bad("entry %d: path is missing or not NUL-terminated", i)
		}
		out = append(out, FileMapping{Start: start, End: end, Offset: off, Path: string(names[:j])})
		names = names[j+1:]
	}
	return out, nil
}
