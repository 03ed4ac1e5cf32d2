package debugfile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"
)

// maxDebugLink bounds the .gnu_debuglink section: a file name plus a CRC.
const maxDebugLink = 4096

// DebugLink returns the file name and CRC recorded in f's .gnu_debuglink
// section. It returns "" and no error when f has no such section.
func DebugLink(f *elf.File) (name string, crc uint32, err error) {
	s := f.Section(".gnu_debuglink")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return "", 0, nil
	}
	if s.Size > maxDebugLink {
		return "", 0, &FormatError{What: ".gnu_debuglink", Msg: fmt.Sprintf("section size %d exceeds %d bytes", s.Size, maxDebugLink)}
	}
	data, err := s.Data()
	if err != nil {
		return "", 0, fmt.Errorf("read .gnu_debuglink: %w", err)
	}
	return ParseDebugLink(data, f.ByteOrder)
}

// ParseDebugLink decodes the contents of a .gnu_debuglink section: a
// NUL-terminated file name, zero padding to a 4-byte boundary, and the CRC-32
// of the debug file in the ELF file's byte order.
//
// The name must be a plain file name: one holding a '/' (or "." / "..")
// could lead the search outside the directories it is meant to look in.
func ParseDebugLink(data []byte, order binary.ByteOrder) (string, uint32, error) {
	nul := bytes.IndexByte(data, 0)
	if nul < 0 {
		return "", 0, &FormatError{What: ".gnu_debuglink", Offset: int64(len(data)), Msg: "file name is not NUL-terminated"}
	}
	name := string(data[:nul])
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return "", 0, &FormatError{What: ".gnu_debuglink", Msg: fmt.Sprintf("file name %q is not a plain file name", name)}
	}
	crcOff := int(roundUp(uint64(nul)+1, 4))
	if crcOff+4 > len(data) {
		return "", 0, &FormatError{What: ".gnu_debuglink", Offset: int64(crcOff), Msg: "CRC missing (section truncated)"}
	}
	return name, order.Uint32(data[crcOff:]), nil
}

// CRC32File computes the CRC that .gnu_debuglink records for a debug file:
// the IEEE CRC-32 (the polynomial of zlib and gdb's gnu_debuglink_crc32) of
// the whole file.
func CRC32File(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, f); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}
