package pcache

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"sort"
	"sync"
)

// FormatVersion is the version of the file layout this package reads and
// writes. Bump it on any change of the header, table or footer.
const FormatVersion = 1

const (
	headerSize = 192
	dataOffset = 4096 // sections start on a page of their own
	footerSize = 24
	entryFixed = 32 // table entry without its names
	maxBuildID = 64
	maxName    = 255
	maxAlign   = 4096
	maxEntries = 1 << 16
)

var (
	magic       = [8]byte{'S', 'O', 'N', 'D', 'E', 'P', 'C', 0}
	footerMagic = [8]byte{'P', 'C', 'A', 'C', 'H', 'E', 'N', 'D'}
	le          = binary.LittleEndian
	// castagnoli is built on first use: programs that never touch a cache
	// file do not pay for its tables at start-up.
	castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })
)

// Header field offsets.
const (
	hMagic     = 0
	hVersion   = 8
	hArch      = 12
	hFlags     = 16
	hBuildLen  = 20
	hFileSize  = 24
	hTableOff  = 32
	hTableLen  = 40
	hTableCRC  = 48
	hNumSect   = 52
	hSrcSize   = 56
	hSrcMtime  = 64
	hBuildID   = 72
	hReserved  = hBuildID + maxBuildID // zero up to the checksum
	hHeaderCRC = headerSize - 4
)

// Footer field offsets, from the footer's start.
const (
	fFileSize  = 0
	fHeaderCRC = 8
	fReserved  = 12
	fMagic     = 16
)

// hostArch is the ELF machine of the running program: cache contents may
// hold native-endian, native-layout data, so a file is only valid for the
// architecture that wrote it.
var hostArch = archOf(runtime.GOARCH)

func archOf(goarch string) uint32 {
	switch goarch {
	case "amd64":
		return uint32(elf.EM_X86_64)
	case "386":
		return uint32(elf.EM_386)
	case "arm64":
		return uint32(elf.EM_AARCH64)
	case "arm":
		return uint32(elf.EM_ARM)
	case "riscv64":
		return uint32(elf.EM_RISCV)
	case "ppc64le":
		return uint32(elf.EM_PPC64)
	case "s390x":
		return uint32(elf.EM_S390)
	}
	return 0
}

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli()) }

// parallelChecksums: above this many bytes of sections, Decode checks
// sections on several cores (a 10 MB file: ~1.3 ms on one core here, the
// data being cold in the CPU caches).
const parallelChecksums = 2 << 20

// verifySections checks every section's checksum and returns the index of
// the first (in file order) that does not match, or -1.
// With serial, one goroutine checks them all (Cache.Background).
func verifySections(entries []tableEntry, serial bool) int {
	var total uint64
	for i := range entries {
		total += entries[i].size
	}
	workers := min(runtime.GOMAXPROCS(0), 4)
	if total < parallelChecksums || workers < 2 || serial {
		for i := range entries {
			if checksum(entries[i].Data) != entries[i].crc {
				return i
			}
		}
		return -1
	}
	// Largest first, each to the next free worker.
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return entries[order[a]].size > entries[order[b]].size })
	bad := make([]bool, len(entries))
	next := make(chan int, len(order))
	for _, i := range order {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				bad[i] = checksum(entries[i].Data) != entries[i].crc
			}
		}()
	}
	wg.Wait()
	for i, b := range bad {
		if b {
			return i
		}
	}
	return -1
}

// Identity names the source file a cache file was derived from. Two
// identities match when build-id, size and modification time are equal: a
// rebuilt or replaced file never meets data derived from its predecessor.
type Identity struct {
	BuildID []byte // from the ELF build-id note; may be empty
	Size    int64  // file size in bytes
	ModTime int64  // modification time, nanoseconds since the Unix epoch
}

// Equal reports whether id and o name the same version of a file.
func (id Identity) Equal(o Identity) bool {
	return bytes.Equal(id.BuildID, o.BuildID) && id.Size == o.Size && id.ModTime == o.ModTime
}

// Section is one client section of a cache file.
type Section struct {
	Client        string // the client that wrote it
	ClientVersion uint32 // the version of that client
	Name          string // unique within the client
	Align         int    // alignment of Data's offset in the file (a power of two ≤ 4096)
	// Data is the section's contents. In a loaded File it is read-only
	// (memory-mapped) and valid until the File is closed.
	Data []byte
}

// tableEntry is a Section's row in the section table.
type tableEntry struct {
	Section
	off, size uint64
	crc       uint32
}

func isZero(b []byte) bool {
	for len(b) >= 8 {
		if le.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parsedHeader holds the header fields Decode needs after validation.
type parsedHeader struct {
	id                        Identity
	fileSize, tableOff, tabLn uint64
	tableCRC                  uint32
	nsect                     uint32
}

// Decode validates a whole cache file held in data and returns its sections
// (which alias data). want, when not nil, is the identity the file must have
// been derived from. path is used in errors only. Every check of the package
// comment except ownership is made here; no client code runs.
func Decode(data []byte, path string, want *Identity) (*File, error) {
	return decode(data, path, want, false)
}

// decode is Decode; serial checks the sections' checksums on the calling
// goroutine alone.
func decode(data []byte, path string, want *Identity, serial bool) (*File, error) {
	if len(data) < len(magic) || !bytes.Equal(data[:len(magic)], magic[:]) {
		return nil, fail(path, ReasonNotCache, "no pcache magic at offset 0")
	}
	if len(data) < dataOffset+footerSize {
		return nil, fail(path, ReasonTruncated, "%d bytes, shorter than header and footer", len(data))
	}
	foot := data[len(data)-footerSize:]
	if !bytes.Equal(foot[fMagic:], footerMagic[:]) {
		return nil, fail(path, ReasonTruncated, "no footer magic at offset %#x", len(data)-footerSize+fMagic)
	}
	if v := le.Uint32(data[hVersion:]); v != FormatVersion {
		return nil, fail(path, ReasonVersion, "file has version %d, want %d", v, FormatVersion)
	}
	hcrc := le.Uint32(data[hHeaderCRC:])
	if got := checksum(data[:hHeaderCRC]); got != hcrc {
		return nil, fail(path, ReasonChecksum, "header checksum %#x, computed %#x", hcrc, got)
	}
	h, err := parseHeader(data, path)
	if err != nil {
		return nil, err
	}
	if h.fileSize != uint64(len(data)) {
		r := ReasonTruncated
		if h.fileSize < uint64(len(data)) {
			r = ReasonCorrupt
		}
		return nil, fail(path, r, "file is %d bytes, header says %d", len(data), h.fileSize)
	}
	if le.Uint64(foot[fFileSize:]) != h.fileSize || le.Uint32(foot[fHeaderCRC:]) != hcrc || le.Uint32(foot[fReserved:]) != 0 {
		return nil, fail(path, ReasonCorrupt, "footer at %#x disagrees with the header", len(data)-footerSize)
	}
	if a := le.Uint32(data[hArch:]); a != hostArch {
		return nil, fail(path, ReasonArch, "file is for %v, this is %v", elf.Machine(a), elf.Machine(hostArch))
	}
	if want != nil && !want.Equal(h.id) {
		return nil, fail(path, ReasonModule, "derived from build-id %x size %d mtime %d, the file is now build-id %x size %d mtime %d",
			h.id.BuildID, h.id.Size, h.id.ModTime, want.BuildID, want.Size, want.ModTime)
	}
	if !isZero(data[headerSize:dataOffset]) {
		return nil, fail(path, ReasonCorrupt, "non-zero bytes between header and data")
	}
	table := data[h.tableOff : h.tableOff+h.tabLn]
	if got := checksum(table); got != h.tableCRC {
		return nil, fail(path, ReasonChecksum, "section table checksum %#x, computed %#x", h.tableCRC, got)
	}
	entries, err := parseTable(table, h.nsect, path)
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, Identity: h.id, data: data}
	pos := uint64(dataOffset)
	for i := range entries {
		e := &entries[i]
		if e.off < pos || e.off > h.tableOff || e.off%uint64(e.Align) != 0 || e.size > h.tableOff-e.off {
			return nil, fail(path, ReasonCorrupt, "section %s/%s at %#x size %#x overlaps or lies outside [%#x, %#x)",
				e.Client, e.Name, e.off, e.size, pos, h.tableOff)
		}
		if !isZero(data[pos:e.off]) {
			return nil, fail(path, ReasonCorrupt, "non-zero padding at %#x", pos)
		}
		e.Data = data[e.off : e.off+e.size : e.off+e.size]
		pos = e.off + e.size
	}
	if !isZero(data[pos:h.tableOff]) {
		return nil, fail(path, ReasonCorrupt, "non-zero padding at %#x", pos)
	}
	if i := verifySections(entries, serial); i >= 0 {
		e := &entries[i]
		return nil, fail(path, ReasonChecksum, "section %s/%s at %#x: checksum %#x, computed %#x",
			e.Client, e.Name, e.off, e.crc, checksum(e.Data))
	}
	for i := range entries {
		f.sections = append(f.sections, entries[i].Section)
	}
	return f, nil
}

// parseHeader reads the header fields whose checksum was verified and checks
// that they describe a possible file.
func parseHeader(data []byte, path string) (parsedHeader, error) {
	var h parsedHeader
	if fl := le.Uint32(data[hFlags:]); fl != 0 {
		return h, fail(path, ReasonCorrupt, "unknown flags %#x", fl)
	}
	if !isZero(data[hReserved:hHeaderCRC]) {
		return h, fail(path, ReasonCorrupt, "non-zero reserved header bytes")
	}
	n := le.Uint32(data[hBuildLen:])
	if n > maxBuildID {
		return h, fail(path, ReasonCorrupt, "build-id length %d", n)
	}
	if !isZero(data[hBuildID+n : hBuildID+maxBuildID]) {
		return h, fail(path, ReasonCorrupt, "non-zero bytes after the build-id")
	}
	if n > 0 {
		h.id.BuildID = append([]byte(nil), data[hBuildID:hBuildID+n]...)
	}
	h.id.Size = int64(le.Uint64(data[hSrcSize:]))
	h.id.ModTime = int64(le.Uint64(data[hSrcMtime:]))
	h.fileSize = le.Uint64(data[hFileSize:])
	h.tableOff = le.Uint64(data[hTableOff:])
	h.tabLn = le.Uint64(data[hTableLen:])
	h.tableCRC = le.Uint32(data[hTableCRC:])
	h.nsect = le.Uint32(data[hNumSect:])
	if h.fileSize < dataOffset+footerSize || h.fileSize > uint64(len(data)) {
		return h, nil // Decode reports the size mismatch
	}
	end := h.fileSize - footerSize
	if h.tableOff < dataOffset || h.tableOff > end || h.tabLn != end-h.tableOff {
		return h, fail(path, ReasonCorrupt, "section table at %#x length %#x does not end at the footer (%#x)", h.tableOff, h.tabLn, end)
	}
	if h.nsect > maxEntries {
		return h, fail(path, ReasonCorrupt, "%d sections", h.nsect)
	}
	return h, nil
}

// parseTable decodes n table entries, which must fill table exactly.
func parseTable(table []byte, n uint32, path string) ([]tableEntry, error) {
	out := make([]tableEntry, 0, min(n, uint32(len(table)/entryFixed)))
	seen := map[[2]string]bool{}
	off := 0
	for i := uint32(0); i < n; i++ {
		if len(table)-off < entryFixed {
			return nil, fail(path, ReasonCorrupt, "section table entry %d is cut short", i)
		}
		b := table[off:]
		cl, nl := int(le.Uint16(b[0:])), int(le.Uint16(b[2:]))
		if cl == 0 || nl == 0 || cl > maxName || nl > maxName || len(b) < entryFixed+cl+nl {
			return nil, fail(path, ReasonCorrupt, "section table entry %d: name lengths %d, %d", i, cl, nl)
		}
		e := tableEntry{
			Section: Section{
				ClientVersion: le.Uint32(b[4:]),
				Align:         int(le.Uint32(b[8:])),
				Client:        string(b[entryFixed : entryFixed+cl]),
				Name:          string(b[entryFixed+cl : entryFixed+cl+nl]),
			},
			crc:  le.Uint32(b[12:]),
			off:  le.Uint64(b[16:]),
			size: le.Uint64(b[24:]),
		}
		if e.Align <= 0 || e.Align > maxAlign || e.Align&(e.Align-1) != 0 {
			return nil, fail(path, ReasonCorrupt, "section %s/%s: alignment %d", e.Client, e.Name, e.Align)
		}
		k := [2]string{e.Client, e.Name}
		if seen[k] {
			return nil, fail(path, ReasonCorrupt, "section %s/%s appears twice", e.Client, e.Name)
		}
		seen[k] = true
		out = append(out, e)
		off += entryFixed + cl + nl
	}
	if off != len(table) {
		return nil, fail(path, ReasonCorrupt, "%d bytes after the last section table entry", len(table)-off)
	}
	return out, nil
}

// encodeHeader fills the header and footer of a file of fileSize bytes.
func encodeHeader(hdr, foot []byte, id Identity, fileSize, tableOff, tableLen uint64, tableCRC uint32, nsect int) {
	clear(hdr)
	copy(hdr[hMagic:], magic[:])
	le.PutUint32(hdr[hVersion:], FormatVersion)
	le.PutUint32(hdr[hArch:], hostArch)
	le.PutUint32(hdr[hBuildLen:], uint32(len(id.BuildID)))
	le.PutUint64(hdr[hFileSize:], fileSize)
	le.PutUint64(hdr[hTableOff:], tableOff)
	le.PutUint64(hdr[hTableLen:], tableLen)
	le.PutUint32(hdr[hTableCRC:], tableCRC)
	le.PutUint32(hdr[hNumSect:], uint32(nsect))
	le.PutUint64(hdr[hSrcSize:], uint64(id.Size))
	le.PutUint64(hdr[hSrcMtime:], uint64(id.ModTime))
	copy(hdr[hBuildID:], id.BuildID)
	crc := checksum(hdr[:hHeaderCRC])
	le.PutUint32(hdr[hHeaderCRC:], crc)
	clear(foot)
	le.PutUint64(foot[fFileSize:], fileSize)
	le.PutUint32(foot[fHeaderCRC:], crc)
	copy(foot[fMagic:], footerMagic[:])
}

// appendEntry appends e's table row.
func appendEntry(dst []byte, e *tableEntry) []byte {
	var b [entryFixed]byte
	le.PutUint16(b[0:], uint16(len(e.Client)))
	le.PutUint16(b[2:], uint16(len(e.Name)))
	le.PutUint32(b[4:], e.ClientVersion)
	le.PutUint32(b[8:], uint32(e.Align))
	le.PutUint32(b[12:], e.crc)
	le.PutUint64(b[16:], e.off)
	le.PutUint64(b[24:], e.size)
	dst = append(dst, b[:]...)
	dst = append(dst, e.Client...)
	return append(dst, e.Name...)
}
