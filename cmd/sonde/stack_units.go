package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/internal/leb128"
	"github.com/sondedbg/sonde/symbols"
)

// gdb prints a source file the way its line table names it: the file's
// directory entry joined with its name, not the full path that symbols
// reports (the compilation directory joined in front). A program built with
// `gcc -g src/main.c` in /home/u/p shows "src/main.c" in gdb's bt, not
// "/home/u/p/src/main.c". Turning one into the other needs the compilation
// unit's DW_AT_comp_dir and DW_AT_name, which the symbols API does not expose
// (yet): this file reads just those two attributes, finding the unit through
// .debug_aranges. Units that aranges does not list keep symbols' path.

// unitInfo is what gdbSourceFile needs of a compilation unit.
type unitInfo struct {
	name, compDir string
	version       uint16
}

// unitNames finds the compilation unit of an address in one binary's DWARF.
type unitNames struct {
	once   sync.Once
	load   func()   // reads the sections (once)
	ranges []arange // sorted by start
	sec    dwarfSections

	mu    sync.Mutex
	units map[uint64]*unitInfo // by unit offset; nil entry: unreadable
}

type arange struct {
	start, end uint64
	unit       uint64 // offset of the unit in .debug_info
}

type dwarfSections struct {
	info, abbrev, str, lineStr, strOffsets []byte
}

// unitsOf returns the unit finder of a binary, made once per binary.
var unitsOf = func() func(b *symbols.Binary) *unitNames {
	var mu sync.Mutex
	m := map[*symbols.Binary]*unitNames{}
	return func(b *symbols.Binary) *unitNames {
		mu.Lock()
		defer mu.Unlock()
		u := m[b]
		if u == nil {
			u = &unitNames{units: map[uint64]*unitInfo{}}
			m[b] = u
			bin := b
			u.load = func() {
				get := func(name string) []byte { d, _ := bin.DWARFSection(name); return d }
				u.sec = dwarfSections{info: get(".debug_info"), abbrev: get(".debug_abbrev"), str: get(".debug_str"),
					lineStr: get(".debug_line_str"), strOffsets: get(".debug_str_offsets")}
				u.ranges, _ = parseAranges(get(".debug_aranges"))
			}
		}
		return u
	}
}()

// unit returns the compilation unit that covers the link-time address addr,
// or nil.
func (u *unitNames) unit(addr uint64) *unitInfo {
	u.once.Do(func() {
		if u.load != nil {
			u.load()
		}
	})
	i := sort.Search(len(u.ranges), func(i int) bool { return u.ranges[i].end > addr })
	if i == len(u.ranges) || addr < u.ranges[i].start {
		return nil
	}
	off := u.ranges[i].unit
	u.mu.Lock()
	defer u.mu.Unlock()
	info, seen := u.units[off]
	if !seen {
		info, _ = readUnitNames(u.sec, off)
		u.units[off] = info
	}
	return info
}

// gdbSourceFile turns symbols' full path of a source file into the name gdb
// prints, given the file's compilation unit:
//   - a relative directory entry: the entry and the name ("src/main.c",
//     glibc's "../sysdeps/unix/sysv/linux/read.c");
//   - the unit's own source file, named relatively in an absolute
//     compilation directory: DW_AT_name ("t.c");
//   - in DWARF 4, a file in the compilation directory: its name;
//   - anything else (absolute directory entries, relative compilation
//     directories such as glibc's "./nptl"): the path as symbols has it.
func gdbSourceFile(file string, u *unitInfo) string {
	if u == nil || u.compDir == "" || u.compDir == "/" {
		return file
	}
	rem, ok := strings.CutPrefix(file, u.compDir+"/")
	if !ok || rem == "" {
		return file
	}
	switch {
	case strings.Contains(rem, "/"):
		return rem
	case path.IsAbs(u.compDir) && rem == u.name:
		return rem
	case u.version < 5 && path.IsAbs(u.compDir):
		return rem
	}
	return file
}

// aranges parsing ----------------------------------------------------------

// errTruncated: a section ends inside a structure.
var errTruncated = errors.New("truncated")

// maxAranges bounds the table built from a (possibly hostile) section.
const maxAranges = 1 << 22

// parseAranges reads every address range set of .debug_aranges; damaged
// sets end the parse with what was read before them.
func parseAranges(sec []byte) ([]arange, error) {
	var out []arange
	le := binary.LittleEndian
	for off := 0; off < len(sec); {
		b := sec[off:]
		if len(b) < 4 {
			return sortRanges(out), fmt.Errorf(".debug_aranges+%#x: %w", off, errTruncated)
		}
		length, hdr, offSize := uint64(le.Uint32(b)), 4, 4
		if length == 0xffffffff {
			if len(b) < 12 {
				return sortRanges(out), fmt.Errorf(".debug_aranges+%#x: %w", off, errTruncated)
			}
			length, hdr, offSize = le.Uint64(b[4:]), 12, 8
		}
		if length > uint64(len(b)-hdr) || length < uint64(2+offSize+2) {
			return sortRanges(out), fmt.Errorf(".debug_aranges+%#x: set length %d: %w", off, length, errTruncated)
		}
		set := b[hdr : hdr+int(length)]
		off += hdr + int(length)
		// version(2) debug_info_offset(offSize) address_size(1) segment_size(1)
		var unit uint64
		if offSize == 4 {
			unit = uint64(le.Uint32(set[2:]))
		} else {
			unit = le.Uint64(set[2:])
		}
		addrSize, segSize := int(set[2+offSize]), int(set[3+offSize])
		if addrSize != 8 && addrSize != 4 || segSize != 0 {
			continue // not an x86-64 table we can read
		}
		// Tuples start at a multiple of twice the address size from the
		// set's start (the unit_length field included).
		tupleSize := 2 * addrSize
		pos := hdr + 4 + offSize
		pos = (pos + tupleSize - 1) / tupleSize * tupleSize
		for p := pos - hdr; p+tupleSize <= len(set); p += tupleSize {
			var start, size uint64
			if addrSize == 8 {
				start, size = le.Uint64(set[p:]), le.Uint64(set[p+8:])
			} else {
				start, size = uint64(le.Uint32(set[p:])), uint64(le.Uint32(set[p+4:]))
			}
			if start == 0 && size == 0 {
				break
			}
			if size == 0 || start+size < start {
				continue
			}
			if len(out) >= maxAranges {
				return sortRanges(out), errors.New(".debug_aranges: too many ranges")
			}
			out = append(out, arange{start, start + size, unit})
		}
	}
	return sortRanges(out), nil
}

func sortRanges(r []arange) []arange {
	sort.Slice(r, func(i, j int) bool { return r[i].start < r[j].start })
	return r
}

// unit DIE parsing ---------------------------------------------------------

// DWARF constants used here.
const (
	dwAtName           = 0x03
	dwAtCompDir        = 0x1b
	dwAtStrOffsetsBase = 0x72

	dwUtCompile  = 0x01
	dwUtPartial  = 0x03
	dwUtSkeleton = 0x04
)

// dieReader decodes values at the front of a byte slice; a read past the end
// sets err and returns zeros.
type dieReader struct {
	b       []byte
	err     error
	offSize int
}

func (r *dieReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errTruncated
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *dieReader) uint(n int) uint64 {
	b := r.take(n)
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func (r *dieReader) uleb() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := leb128.Uint(r.b)
	if n == 0 {
		r.err = errTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *dieReader) sleb() {
	if r.err != nil {
		return
	}
	if _, n := leb128.Int(r.b); n == 0 {
		r.err = errTruncated
	} else {
		r.b = r.b[n:]
	}
}

func (r *dieReader) cstring() string {
	if r.err != nil {
		return ""
	}
	i := 0
	for i < len(r.b) && r.b[i] != 0 {
		i++
	}
	if i == len(r.b) {
		r.err = errTruncated
		return ""
	}
	s := string(r.b[:i])
	r.b = r.b[i+1:]
	return s
}

// strValue is a string attribute as it was encoded: inline, at an offset in
// a string section, or by index through .debug_str_offsets.
type strValue struct {
	inline  string
	sec     []byte // .debug_str or .debug_line_str, for an offset
	off     uint64
	index   uint64
	indexed bool
	ok      bool
}

// readUnitNames reads DW_AT_name and DW_AT_comp_dir of the unit DIE of the
// unit at off in .debug_info.
func readUnitNames(sec dwarfSections, off uint64) (*unitInfo, error) {
	if off >= uint64(len(sec.info)) {
		return nil, fmt.Errorf(".debug_info+%#x: %w", off, errTruncated)
	}
	r := &dieReader{b: sec.info[off:], offSize: 4}
	length := r.uint(4)
	if length == 0xffffffff {
		length, r.offSize = r.uint(8), 8
	}
	if r.err == nil && length < uint64(len(r.b)) {
		r.b = r.b[:length]
	}
	version := uint16(r.uint(2))
	var abbrevOff uint64
	addrSize := 8
	switch {
	case version == 5:
		ut := r.uint(1)
		addrSize = int(r.uint(1))
		abbrevOff = r.uint(r.offSize)
		switch ut {
		case dwUtCompile, dwUtPartial:
		case dwUtSkeleton:
			r.take(8) // dwo_id
		default:
			return nil, fmt.Errorf(".debug_info+%#x: unit type %d", off, ut)
		}
	case version >= 2 && version <= 4:
		abbrevOff = r.uint(r.offSize)
		addrSize = int(r.uint(1))
	default:
		return nil, fmt.Errorf(".debug_info+%#x: DWARF version %d", off, version)
	}
	code := r.uleb()
	if r.err != nil {
		return nil, fmt.Errorf(".debug_info+%#x: %w", off, r.err)
	}
	specs, err := findAbbrev(sec.abbrev, abbrevOff, code)
	if err != nil {
		return nil, fmt.Errorf(".debug_info+%#x: %w", off, err)
	}
	var name, compDir strValue
	var strOffBase uint64
	for _, sp := range specs {
		v := readForm(r, sp.form, addrSize, version, sec, 0)
		if r.err != nil {
			return nil, fmt.Errorf(".debug_info+%#x: attribute %#x: %w", off, sp.attr, r.err)
		}
		switch sp.attr {
		case dwAtName:
			name = v.str
		case dwAtCompDir:
			compDir = v.str
		case dwAtStrOffsetsBase:
			strOffBase = v.num
		}
	}
	info := &unitInfo{version: version}
	info.name = resolveStr(name, sec, strOffBase, r.offSize)
	info.compDir = resolveStr(compDir, sec, strOffBase, r.offSize)
	return info, nil
}

type attrSpec struct{ attr, form uint64 }

// maxAbbrevs bounds the search through one abbreviation table.
const maxAbbrevs = 1 << 16

// findAbbrev returns the attribute specifications of abbreviation code in
// the table at off.
func findAbbrev(sec []byte, off, code uint64) ([]attrSpec, error) {
	if off >= uint64(len(sec)) {
		return nil, fmt.Errorf(".debug_abbrev+%#x: %w", off, errTruncated)
	}
	r := &dieReader{b: sec[off:]}
	for n := 0; n < maxAbbrevs; n++ {
		c := r.uleb()
		if r.err != nil || c == 0 {
			break
		}
		r.uleb()  // tag
		r.take(1) // children
		var specs []attrSpec
		for r.err == nil {
			a, f := r.uleb(), r.uleb()
			if a == 0 && f == 0 {
				break
			}
			if f == 0x21 { // DW_FORM_implicit_const
				r.sleb()
			}
			if c == code {
				specs = append(specs, attrSpec{a, f})
			}
		}
		if r.err != nil {
			break
		}
		if c == code {
			return specs, nil
		}
	}
	return nil, fmt.Errorf(".debug_abbrev+%#x: no abbreviation %d", off, code)
}

// formValue is a decoded attribute value: a string reference or a number.
type formValue struct {
	str strValue
	num uint64
}

// readForm decodes (or skips) one attribute value of the given form.
func readForm(r *dieReader, form uint64, addrSize int, version uint16, sec dwarfSections, depth int) formValue {
	var v formValue
	refSize := r.offSize
	if version == 2 {
		refSize = addrSize // DW_FORM_ref_addr was address-sized in DWARF 2
	}
	switch form {
	case 0x01: // addr
		v.num = r.uint(addrSize)
	case 0x03: // block2
		r.take(int(r.uint(2)))
	case 0x04: // block4
		r.take(int(r.uint(4)))
	case 0x05: // data2
		v.num = r.uint(2)
	case 0x06: // data4
		v.num = r.uint(4)
	case 0x07: // data8
		v.num = r.uint(8)
	case 0x08: // string
		v.str = strValue{inline: r.cstring(), ok: true}
	case 0x09, 0x18: // block, exprloc
		n := r.uleb()
		if n > uint64(len(r.b)) {
			r.err = errTruncated
		} else {
			r.take(int(n))
		}
	case 0x0a: // block1
		r.take(int(r.uint(1)))
	case 0x0b, 0x0c, 0x11: // data1, flag, ref1
		v.num = r.uint(1)
	case 0x0d: // sdata
		r.sleb()
	case 0x0e: // strp
		v.str = strValue{sec: sec.str, off: r.uint(r.offSize), ok: true}
	case 0x1f: // line_strp
		v.str = strValue{sec: sec.lineStr, off: r.uint(r.offSize), ok: true}
	case 0x0f, 0x15, 0x1b, 0x22, 0x23, 0x1f01: // udata, ref_udata, addrx, loclistx, rnglistx, GNU_addr_index
		v.num = r.uleb()
	case 0x10: // ref_addr
		r.uint(refSize)
	case 0x12: // ref2
		r.uint(2)
	case 0x13, 0x1c: // ref4, ref_sup4
		r.uint(4)
	case 0x14, 0x20, 0x24: // ref8, ref_sig8, ref_sup8
		r.uint(8)
	case 0x16: // indirect
		f := r.uleb()
		if depth > 4 {
			r.err = errors.New("DW_FORM_indirect loop")
			return v
		}
		return readForm(r, f, addrSize, version, sec, depth+1)
	case 0x17: // sec_offset
		v.num = r.uint(r.offSize)
	case 0x19, 0x21: // flag_present, implicit_const (value in the abbreviation)
	case 0x1a, 0x1f02: // strx, GNU_str_index
		v.str = strValue{index: r.uleb(), indexed: true, ok: true}
	case 0x1d, 0x1f20, 0x1f21: // strp_sup, GNU_ref_alt, GNU_strp_alt: in a supplementary file
		r.uint(r.offSize)
	case 0x1e: // data16
		r.take(16)
	case 0x25, 0x26, 0x27, 0x28: // strx1..strx4
		v.str = strValue{index: r.uint(int(form - 0x24)), indexed: true, ok: true}
	case 0x29, 0x2a, 0x2b, 0x2c: // addrx1..addrx4
		v.num = r.uint(int(form - 0x28))
	default:
		r.err = fmt.Errorf("unknown form %#x", form)
	}
	return v
}

// resolveStr reads a string attribute's text ("" when it cannot be read).
func resolveStr(v strValue, sec dwarfSections, strOffBase uint64, offSize int) string {
	switch {
	case !v.ok:
		return ""
	case v.indexed:
		base := strOffBase
		if base == 0 {
			base = uint64(2 * offSize) // the first contribution's header (DWARF 5 without a base)
		}
		at := base + v.index*uint64(offSize)
		if at < base || at+uint64(offSize) > uint64(len(sec.strOffsets)) {
			return ""
		}
		r := &dieReader{b: sec.strOffsets[at:]}
		v = strValue{sec: sec.str, off: r.uint(offSize)}
	case v.sec == nil:
		return v.inline
	}
	if v.off >= uint64(len(v.sec)) {
		return ""
	}
	b := v.sec[v.off:]
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return ""
}
