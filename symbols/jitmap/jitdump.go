package jitmap

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// jitdump constants (perf's tools/perf/util/jitdump.h).
const (
	jitMagic     = 0x4A695444 // "JiTD" as the writer's native u32
	jitHeaderMin = 40
	recHeader    = 16

	recCodeLoad = 0
	recCodeMove = 1
	recClose    = 3

	codeLoadFixed = 4 + 4 + 8 + 8 + 8 + 8 // pid, tid, vma, code_addr, code_size, code_index
	codeMoveFixed = 4 + 4 + 8 + 8 + 8 + 8 + 8
	maxNameLen    = 64 << 10
)

// ParseJitdump parses a jitdump file: code-load records name code ranges,
// code-move records move them (by code index). Other records are skipped. A
// damaged or truncated record ends the parse; the table holds the records
// before it (a file being written ends with a partial record, which is no
// error).
func ParseJitdump(data []byte) (*Table, error) {
	if len(data) < jitHeaderMin {
		return newTable(nil), &FormatError{"jitdump", 0, "file shorter than its header"}
	}
	var bo binary.ByteOrder = binary.LittleEndian
	switch bo.Uint32(data) {
	case jitMagic:
	case 0x4454694A:
		bo = binary.BigEndian
	default:
		return newTable(nil), &FormatError{"jitdump", 0, fmt.Sprintf("bad magic %#x", bo.Uint32(data))}
	}
	hdrSize := uint64(bo.Uint32(data[8:]))
	if hdrSize < jitHeaderMin || hdrSize > uint64(len(data)) {
		return newTable(nil), &FormatError{"jitdump", 8, fmt.Sprintf("header size %d", hdrSize)}
	}
	var syms []Symbol
	byIndex := map[uint64]int{} // code_index → syms index
	off := hdrSize
	for off+recHeader <= uint64(len(data)) {
		id := bo.Uint32(data[off:])
		size := uint64(bo.Uint32(data[off+4:]))
		if size < recHeader {
			return newTable(syms), &FormatError{"jitdump", int64(off), fmt.Sprintf("record size %d", size)}
		}
		if off+size > uint64(len(data)) {
			break // the last record is being written
		}
		body := data[off+recHeader : off+size]
		switch id {
		case recCodeLoad:
			if len(body) < codeLoadFixed {
				return newTable(syms), &FormatError{"jitdump", int64(off), "short code-load record"}
			}
			addr := bo.Uint64(body[16:])
			codeSize := bo.Uint64(body[24:])
			index := bo.Uint64(body[32:])
			name := body[codeLoadFixed:]
			end := bytes.IndexByte(name, 0)
			if end < 0 || end > maxNameLen {
				return newTable(syms), &FormatError{"jitdump", int64(off), "code-load name not terminated"}
			}
			if addr+codeSize < addr {
				return newTable(syms), &FormatError{"jitdump", int64(off), "code range wraps around"}
			}
			if codeSize > 0 {
				byIndex[index] = len(syms)
				syms = append(syms, Symbol{Start: addr, Size: codeSize, Name: string(name[:end])})
			}
		case recCodeMove:
			if len(body) < codeMoveFixed {
				return newTable(syms), &FormatError{"jitdump", int64(off), "short code-move record"}
			}
			newAddr := bo.Uint64(body[24:])
			codeSize := bo.Uint64(body[32:])
			index := bo.Uint64(body[40:])
			if newAddr+codeSize < newAddr {
				return newTable(syms), &FormatError{"jitdump", int64(off), "code range wraps around"}
			}
			if i, ok := byIndex[index]; ok && codeSize > 0 {
				byIndex[index] = len(syms)
				syms = append(syms, Symbol{Start: newAddr, Size: codeSize, Name: syms[i].Name})
			}
		case recClose:
			return newTable(syms), nil
		}
		off += size
	}
	return newTable(syms), nil
}
