package cfi

import "strings"

// CIE is a parsed Common Information Entry.
type CIE struct {
	Offset       uint64 // section offset of the entry
	Version      uint8
	Augmentation string
	AddrSize     uint8
	CodeAlign    uint64
	DataAlign    int64
	RAReg        uint64
	FDEEncoding  uint8 // DW_EH_PE_* for pointers in FDEs ('R')
	LSDAEncoding uint8 // 'L'; EncOmit when absent
	Personality  uint64
	SignalFrame  bool // 'S'
	Instructions []byte
	hasAugData   bool
	dwarf64      bool
	// PersonalityIndirect: the personality pointer was DW_EH_PE_indirect and
	// Options.ReadPointer was not given, so Personality is the address of the
	// pointer (typically DW.ref.__gxx_personality_v0), not the routine.
	PersonalityIndirect bool
}

// FDE is a parsed Frame Description Entry.
type FDE struct {
	Offset       uint64
	CIE          CIE
	PCBegin      uint64
	PCEnd        uint64
	LSDA         uint64
	Instructions []byte
}

// entry is the framing of one CIE or FDE.
type entry struct {
	offset  uint64 // of the length field
	body    int    // offset of the CIE id / CIE pointer field
	end     int    // offset just past the entry
	id      uint64 // CIE id or CIE pointer as stored
	idPos   int    // offset of the id field
	dwarf64 bool
	isCIE   bool
	cieOff  uint64 // for FDEs: the section offset of their CIE
	last    bool   // zero terminator (.eh_frame)
}

// readEntry frames the entry at off.
func (t *Table) readEntry(off uint64) (entry, error) {
	data := t.data
	if off >= uint64(len(data)) {
		return entry{}, t.err(off, ErrTruncated, "entry offset past end of section")
	}
	d := buf{b: data, off: int(off), end: len(data)}
	e := entry{offset: off}
	length := d.fixed(4)
	if d.bad {
		return entry{}, t.err(off, ErrTruncated, "length")
	}
	if length == 0xffffffff {
		length = d.fixed(8)
		e.dwarf64 = true
		if d.bad {
			return entry{}, t.err(off, ErrTruncated, "64-bit length")
		}
	} else if length >= 0xfffffff0 {
		return entry{}, t.err(off, ErrBadLength, "reserved length value")
	}
	if length == 0 {
		if t.section == EHFrame {
			e.last = true
			e.end = d.off
			return e, nil
		}
		return entry{}, t.err(off, ErrBadLength, "zero length")
	}
	if length > uint64(d.avail()) {
		return entry{}, t.err(off, ErrBadLength, "entry runs past end of section")
	}
	e.body = d.off
	e.end = d.off + int(length)
	d.end = e.end
	e.idPos = d.off
	if e.dwarf64 {
		e.id = d.fixed(8)
	} else {
		e.id = d.fixed(4)
	}
	if d.bad {
		return entry{}, t.err(off, ErrTruncated, "CIE id")
	}
	if t.section == EHFrame {
		e.isCIE = e.id == 0
		if !e.isCIE {
			if e.id > uint64(e.idPos) {
				return entry{}, t.err(off, ErrBadCIE, "CIE pointer before start of section")
			}
			e.cieOff = uint64(e.idPos) - e.id
		}
	} else {
		e.isCIE = e.id == 0xffffffff || e.dwarf64 && e.id == ^uint64(0)
		e.cieOff = e.id
	}
	return e, nil
}

func (t *Table) err(off uint64, cause error, detail string) error {
	return &Error{Section: t.section.String(), Offset: off, Err: cause, Detail: detail}
}

// parseCIE parses the CIE at off.
func (t *Table) parseCIE(off uint64) (CIE, error) {
	e, err := t.readEntry(off)
	if err != nil {
		return CIE{}, err
	}
	if e.last || !e.isCIE {
		return CIE{}, t.err(off, ErrBadCIE, "not a CIE")
	}
	d := buf{b: t.data, off: e.idPos, end: e.end}
	if e.dwarf64 {
		d.off += 8
	} else {
		d.off += 4
	}
	c := CIE{Offset: off, dwarf64: e.dwarf64, LSDAEncoding: EncOmit, AddrSize: uint8(t.addrSize)}
	if t.section == EHFrame {
		c.FDEEncoding = EncAbsptr
	}
	c.Version = d.u8()
	switch c.Version {
	case 1, 3, 4:
	default:
		if d.bad {
			return CIE{}, t.err(off, ErrTruncated, "CIE version")
		}
		return CIE{}, t.err(off, ErrBadVersion, "")
	}
	c.Augmentation = d.augmentation()
	aug := c.Augmentation
	if strings.HasPrefix(aug, "eh") {
		// Old GCC: an address-sized pointer to exception data follows.
		d.fixed(t.addrSize)
		aug = aug[2:]
	}
	if c.Version == 4 {
		c.AddrSize = d.u8()
		seg := d.u8()
		if c.AddrSize != 4 && c.AddrSize != 8 || seg != 0 {
			return CIE{}, t.err(off, ErrBadCIE, "unsupported address or segment size")
		}
	}
	c.CodeAlign = d.uleb()
	c.DataAlign = d.sleb()
	if c.Version == 1 {
		c.RAReg = uint64(d.u8())
	} else {
		c.RAReg = d.uleb()
	}
	if d.bad {
		return CIE{}, t.err(off, ErrTruncated, "CIE header")
	}
	if aug != "" {
		if aug[0] != 'z' {
			return CIE{}, t.err(off, ErrBadAugmentation, c.Augmentation)
		}
		c.hasAugData = true
		n := d.uleb()
		if d.bad || n > uint64(d.avail()) {
			return CIE{}, t.err(off, ErrTruncated, "augmentation data")
		}
		augEnd := d.off + int(n)
		ad := buf{b: t.data, off: d.off, end: augEnd}
		bases := t.bases
	loop:
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				c.FDEEncoding = ad.u8()
			case 'L':
				c.LSDAEncoding = ad.u8()
			case 'P':
				enc := ad.u8()
				p, ind, ok := ad.pointer(enc, int(c.AddrSize), &bases)
				if !ok {
					return CIE{}, t.err(off, ErrBadEncoding, "personality")
				}
				if ind && t.readPointer != nil {
					if v, err := t.readPointer(p); err == nil {
						p, ind = v, false
					}
				}
				c.Personality, c.PersonalityIndirect = p, ind
			case 'S':
				c.SignalFrame = true
			case 'B', 'G':
				// AArch64 BTI / MTE markers: nothing to decode.
			default:
				// Unknown augmentation: its data length is known, so skip the rest.
				break loop
			}
		}
		if ad.bad {
			return CIE{}, t.err(off, ErrTruncated, "augmentation data")
		}
		d.off = augEnd
	}
	if !validEncoding(c.FDEEncoding) {
		return CIE{}, t.err(off, ErrBadEncoding, "FDE pointer encoding")
	}
	c.Instructions = t.data[d.off:e.end]
	return c, nil
}

func validEncoding(enc uint8) bool {
	if enc == EncOmit {
		return false
	}
	switch enc & 0x0f {
	case EncAbsptr, EncULEB128, EncUdata2, EncUdata4, EncUdata8, EncSLEB128, EncSdata2, EncSdata4, EncSdata8:
	default:
		return false
	}
	return enc&0x70 <= EncAligned
}

// parseFDE parses the FDE at off together with its CIE.
func (t *Table) parseFDE(off uint64) (FDE, error) {
	e, err := t.readEntry(off)
	if err != nil {
		return FDE{}, err
	}
	if e.last || e.isCIE {
		return FDE{}, t.err(off, ErrBadCIE, "expected an FDE")
	}
	cie, err := t.parseCIE(e.cieOff)
	if err != nil {
		return FDE{}, err
	}
	return t.parseFDEBody(e, cie)
}

func (t *Table) parseFDEBody(e entry, cie CIE) (FDE, error) {
	d := buf{b: t.data, off: e.idPos, end: e.end}
	if e.dwarf64 {
		d.off += 8
	} else {
		d.off += 4
	}
	f := FDE{Offset: e.offset, CIE: cie}
	bases := t.bases
	enc := cie.FDEEncoding
	if t.section == DebugFrame && !cie.hasAugData {
		enc = EncAbsptr
	}
	begin, ind, ok := d.pointer(enc, int(cie.AddrSize), &bases)
	if ok && ind {
		ok = false
		if t.readPointer != nil {
			var err error
			begin, err = t.readPointer(begin)
			ok = err == nil
		}
	}
	if !ok {
		return FDE{}, t.err(e.offset, ErrBadEncoding, "FDE initial location")
	}
	// The range uses the value format only, never a relative base.
	size, _, ok := d.pointer(enc&0x0f, int(cie.AddrSize), &bases)
	if !ok {
		return FDE{}, t.err(e.offset, ErrTruncated, "FDE address range")
	}
	f.PCBegin = begin
	f.PCEnd = begin + size
	if f.PCEnd < f.PCBegin {
		return FDE{}, t.err(e.offset, ErrBadLength, "FDE address range wraps")
	}
	if cie.hasAugData {
		n := d.uleb()
		if d.bad || n > uint64(d.avail()) {
			return FDE{}, t.err(e.offset, ErrTruncated, "FDE augmentation data")
		}
		augEnd := d.off + int(n)
		if cie.LSDAEncoding != EncOmit {
			ad := buf{b: t.data, off: d.off, end: augEnd}
			bases.funcAt = begin
			var ind bool
			f.LSDA, ind, _ = ad.pointer(cie.LSDAEncoding, int(cie.AddrSize), &bases)
			if ind && t.readPointer != nil {
				if v, err := t.readPointer(f.LSDA); err == nil {
					f.LSDA = v
				}
			}
		}
		d.off = augEnd
	}
	f.Instructions = t.data[d.off:e.end]
	return f, nil
}
