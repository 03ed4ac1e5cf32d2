package tls

import (
	"encoding/binary"
	"fmt"

	"github.com/sondedbg/sonde/variables"
)

// LayoutFromDWARF reads the layout from DWARF that describes glibc's
// internal types: the dynamic linker's (or libc's) separate debug file.
// rtldGlobal is the run-time address of _rtld_global, whose slotinfo list
// lets lookups check a dtv's generation; 0 skips that check.
func LayoutFromDWARF(r *variables.Reader, rtldGlobal uint64) (*Layout, error) {
	lay := &Layout{DTV: defaultDTV, DTVEntry: defaultDTVEntry, DTVVal: defaultDTVVal, Source: "DWARF"}
	var err error
	if lay.LinkMapOffset, err = fieldOffset(r, "link_map", "l_tls_offset"); err != nil {
		return nil, err
	}
	if lay.LinkMapModID, err = fieldOffset(r, "link_map", "l_tls_modid"); err != nil {
		return nil, err
	}
	// The rest has kept its place for decades; DWARF confirms it when
	// present, and is not required.
	if off, err := fieldOffset(r, "tcbhead_t", "dtv"); err == nil {
		lay.DTV = off
	}
	if t := findType(r, "dtv_t"); t != nil && t.ByteSize() > 0 {
		lay.DTVEntry = uint64(t.ByteSize())
		if p, ok := field(t, "pointer"); ok {
			if v, ok := field(p.Type, "val"); ok {
				lay.DTVVal = uint64(p.Offset + v.Offset)
			}
		}
	}
	if rtldGlobal != 0 {
		lay.Slotinfo = slotinfoLayout(r, rtldGlobal)
	}
	return lay, nil
}

func slotinfoLayout(r *variables.Reader, rtldGlobal uint64) *Slotinfo {
	head, err := fieldOffset(r, "rtld_global", "_dl_tls_dtv_slotinfo_list")
	if err != nil {
		return nil
	}
	s := &Slotinfo{Head: rtldGlobal + head}
	list := findType(r, "dtv_slotinfo_list")
	one := findType(r, "dtv_slotinfo")
	if list == nil || one == nil || one.ByteSize() <= 0 {
		return nil
	}
	s.SlotSize = uint64(one.ByteSize())
	for _, f := range []struct {
		t    *variables.Type
		name string
		dst  *uint64
	}{
		{list, "len", &s.ListLen}, {list, "next", &s.ListNext}, {list, "slotinfo", &s.ListSlots},
		{one, "gen", &s.SlotGen}, {one, "map", &s.SlotMap},
	} {
		fl, ok := field(f.t, f.name)
		if !ok {
			return nil
		}
		*f.dst = uint64(fl.Offset)
	}
	return s
}

// findType returns the complete struct or union named name (a tag or a
// typedef), or nil.
func findType(r *variables.Reader, name string) *variables.Type {
	ts, err := r.TypesByName(name)
	if err != nil {
		return nil
	}
	for _, t := range ts {
		s := r.Complete(t).Strip()
		if s != nil && !s.Declaration && (s.Kind == variables.KindStruct || s.Kind == variables.KindUnion) {
			return s
		}
	}
	return nil
}

func field(t *variables.Type, name string) (variables.Field, bool) {
	s := t.Strip()
	if s == nil {
		return variables.Field{}, false
	}
	for _, f := range s.Fields {
		if f.Name == name && f.BitSize == 0 && f.OffsetExpr == nil && f.Offset >= 0 {
			return f, true
		}
	}
	return variables.Field{}, false
}

func fieldOffset(r *variables.Reader, typeName, name string) (uint64, error) {
	t := findType(r, typeName)
	if t == nil {
		return 0, fmt.Errorf("%w: no DWARF for struct %s", ErrNoLayout, typeName)
	}
	f, ok := field(t, name)
	if !ok {
		return 0, fmt.Errorf("%w: struct %s has no member %s", ErrNoLayout, typeName, name)
	}
	return uint64(f.Offset), nil
}

// maxLinkMapScan bounds how much of a link_map ScanLayout reads; glibc's is
// about 1.2 KiB.
const maxLinkMapScan = 4096

// ScanLayout finds the TLS fields in m's link_map by their contents, for
// when no DWARF describes glibc: l_tls_initimage, l_tls_initimage_size,
// l_tls_blocksize and l_tls_align hold m's PT_TLS address, file size, memory
// size and alignment, and l_tls_offset and l_tls_modid follow after
// l_tls_firstbyte_offset. The dtv is assumed where x86-64 glibc has always
// kept it, and dtv generations are not checked.
func ScanLayout(mem Memory, m *Module) (*Layout, error) {
	seg := m.Segment
	if m.LinkMap == 0 || seg.Memsz == 0 {
		return nil, &Error{Module: m.Name, Op: "scan link_map", Err: ErrNoTLS}
	}
	buf := make([]byte, maxLinkMapScan)
	n, _ := mem.ReadMemory(buf, m.LinkMap)
	buf = buf[:n-n%8]
	le := binary.LittleEndian
	want := [4]uint64{m.Bias + seg.Vaddr, seg.Filesz, seg.Memsz, seg.Align}
	for i := 0; i+56 <= len(buf); i += 8 {
		match := true
		for k, w := range want {
			if le.Uint64(buf[i+8*k:]) != w {
				match = false
				break
			}
		}
		if match {
			return &Layout{LinkMapOffset: uint64(i + 40), LinkMapModID: uint64(i + 48),
				DTV: defaultDTV, DTVEntry: defaultDTVEntry, DTVVal: defaultDTVVal, Source: "link_map contents"}, nil
		}
	}
	return nil, &Error{Module: m.Name, Op: "scan link_map", Err: fmt.Errorf("%w: no l_tls_initimage matching PT_TLS in %d bytes at %#x", ErrNoLayout, len(buf), m.LinkMap)}
}
