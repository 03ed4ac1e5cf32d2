package cfi

import (
	"sort"
	"sync"
)

// Options are the facts about the module a Table needs beyond the section
// bytes. Addresses are link-time addresses.
type Options struct {
	// Addr is the address of the section's first byte (for pc-relative pointers).
	Addr uint64
	// AddrSize is the target's pointer size (default 8).
	AddrSize int
	// TextBase and DataBase are what DW_EH_PE_textrel and DW_EH_PE_datarel
	// pointers are relative to (rare on x86-64; GCC uses pcrel).
	TextBase, DataBase uint64
	// Hdr and HdrAddr are the .eh_frame_hdr section and its address; when the
	// header has a usable search table lookups binary-search it.
	Hdr     []byte
	HdrAddr uint64
	// ReadPointer dereferences DW_EH_PE_indirect pointers (the address is a
	// link-time address in the module). Without it, indirect personality and
	// LSDA pointers stay undereferenced and an indirect FDE start is an error.
	ReadPointer func(addr uint64) (uint64, error)
}

// Table indexes the FDEs of one .eh_frame or .debug_frame section.
type Table struct {
	section  Section
	data     []byte
	addr     uint64
	addrSize int
	bases    pointerBases

	readPointer func(uint64) (uint64, error)

	// The .eh_frame_hdr binary search table, when usable.
	hdr      []byte
	hdrAddr  uint64
	hdrTable int // offset of the table in hdr
	hdrCount int
	hdrEnc   uint8
	hdrEntry int // bytes per table entry
	useHdr   bool

	// Without a header: FDEs sorted by start address, built once.
	once    sync.Once
	index   []indexEntry
	indexOK error
}

type indexEntry struct {
	begin, end uint64
	off        uint64
}

// NewEHFrame returns a Table for an .eh_frame section. A malformed
// .eh_frame_hdr is not fatal: the Table then builds its own index.
func NewEHFrame(data []byte, opts Options) *Table {
	t := newTable(EHFrame, data, opts)
	if len(opts.Hdr) > 0 {
		t.parseHdr(opts.Hdr, opts.HdrAddr)
	}
	return t
}

// NewDebugFrame returns a Table for a .debug_frame section.
func NewDebugFrame(data []byte, opts Options) *Table {
	return newTable(DebugFrame, data, opts)
}

func newTable(s Section, data []byte, opts Options) *Table {
	t := &Table{section: s, data: data, addr: opts.Addr, addrSize: opts.AddrSize, readPointer: opts.ReadPointer}
	if t.addrSize != 4 {
		t.addrSize = 8
	}
	t.bases = pointerBases{section: opts.Addr, text: opts.TextBase, data: opts.DataBase}
	return t
}

// Section reports which kind of section t reads.
func (t *Table) Section() Section { return t.section }

// HasSearchTable reports whether lookups use the .eh_frame_hdr table.
func (t *Table) HasSearchTable() bool { return t.useHdr }

func (t *Table) parseHdr(hdr []byte, hdrAddr uint64) {
	if len(hdr) < 4 || hdr[0] != 1 {
		return
	}
	ptrEnc, countEnc, tableEnc := hdr[1], hdr[2], hdr[3]
	d := buf{b: hdr, off: 4, end: len(hdr)}
	bases := pointerBases{section: hdrAddr, data: hdrAddr}
	if _, _, ok := d.pointer(ptrEnc, t.addrSize, &bases); !ok {
		return
	}
	if countEnc == EncOmit || tableEnc == EncOmit {
		return
	}
	count, _, ok := d.pointer(countEnc, t.addrSize, &bases)
	if !ok {
		return
	}
	var size int
	switch tableEnc & 0x0f {
	case EncUdata2, EncSdata2:
		size = 2
	case EncUdata4, EncSdata4:
		size = 4
	case EncUdata8, EncSdata8:
		size = 8
	case EncAbsptr:
		size = t.addrSize
	default:
		return // variable-length entries cannot be binary-searched
	}
	if tableEnc&0x70 != 0 && tableEnc&0x70 != EncDataRel && tableEnc&0x70 != EncPCRel || tableEnc&EncIndirect != 0 {
		return
	}
	if count == 0 || count > uint64(d.avail()/(2*size)) {
		return
	}
	t.hdr, t.hdrAddr = hdr, hdrAddr
	t.hdrTable, t.hdrCount, t.hdrEnc, t.hdrEntry = d.off, int(count), tableEnc, 2*size
	t.useHdr = true
}

// hdrValue decodes field i (0 = initial location, 1 = FDE address) of table entry n.
func (t *Table) hdrValue(n, i int) uint64 {
	off := t.hdrTable + n*t.hdrEntry + i*t.hdrEntry/2
	d := buf{b: t.hdr, off: off, end: off + t.hdrEntry/2}
	bases := pointerBases{section: t.hdrAddr, data: t.hdrAddr}
	v, _, _ := d.pointer(t.hdrEnc, t.addrSize, &bases)
	return v
}

// FindFDE returns the FDE covering pc. The error wraps ErrNoFDE when no FDE
// covers it.
func (t *Table) FindFDE(pc uint64) (FDE, error) {
	var off uint64
	if t.useHdr {
		// Last entry with initial location <= pc.
		n := sort.Search(t.hdrCount, func(i int) bool { return t.hdrValue(i, 0) > pc }) - 1
		if n < 0 {
			return FDE{}, t.notFound(pc)
		}
		fdeAddr := t.hdrValue(n, 1)
		if fdeAddr < t.addr || fdeAddr-t.addr >= uint64(len(t.data)) {
			return FDE{}, &Error{Section: ".eh_frame_hdr", Offset: uint64(t.hdrTable + n*t.hdrEntry), Err: ErrBadHeader, Detail: "FDE address outside .eh_frame"}
		}
		off = fdeAddr - t.addr
	} else {
		if err := t.buildIndex(); err != nil {
			return FDE{}, err
		}
		n := sort.Search(len(t.index), func(i int) bool { return t.index[i].begin > pc }) - 1
		if n < 0 || pc >= t.index[n].end {
			return FDE{}, t.notFound(pc)
		}
		off = t.index[n].off
	}
	f, err := t.parseFDE(off)
	if err != nil {
		return FDE{}, err
	}
	if pc < f.PCBegin || pc >= f.PCEnd {
		return FDE{}, t.notFound(pc)
	}
	return f, nil
}

func (t *Table) notFound(pc uint64) error {
	return &Error{Section: t.section.String(), Offset: 0, Err: ErrNoFDE, Detail: "pc " + hex(pc)}
}

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	var b [18]byte
	i := len(b)
	for {
		i--
		b[i] = digits[v&15]
		v >>= 4
		if v == 0 {
			break
		}
	}
	i--
	b[i] = 'x'
	i--
	b[i] = '0'
	return string(b[i:])
}

// buildIndex scans the section once and sorts its FDEs by start address.
// Entries that do not parse are skipped (the rest of the section stays
// usable); a framing error ends the scan, since nothing after it can be found.
func (t *Table) buildIndex() error {
	t.once.Do(func() {
		cies := map[uint64]CIE{}
		off := uint64(0)
		for off < uint64(len(t.data)) {
			e, err := t.readEntry(off)
			if err != nil {
				if len(t.index) == 0 {
					t.indexOK = err
				}
				break
			}
			if e.last {
				break
			}
			off = uint64(e.end)
			if e.isCIE {
				continue
			}
			cie, ok := cies[e.cieOff]
			if !ok {
				if cie, err = t.parseCIE(e.cieOff); err != nil {
					continue
				}
				cies[e.cieOff] = cie
			}
			f, err := t.parseFDEBody(e, cie)
			if err != nil || f.PCBegin == f.PCEnd {
				continue
			}
			t.index = append(t.index, indexEntry{begin: f.PCBegin, end: f.PCEnd, off: e.offset})
		}
		sort.Slice(t.index, func(i, j int) bool { return t.index[i].begin < t.index[j].begin })
	})
	return t.indexOK
}

// ForEachFDE calls fn for every FDE in section order, stopping at the first
// error it returns or at a framing error (which it returns).
func (t *Table) ForEachFDE(fn func(FDE) error) error {
	off := uint64(0)
	for off < uint64(len(t.data)) {
		e, err := t.readEntry(off)
		if err != nil {
			return err
		}
		if e.last {
			return nil
		}
		off = uint64(e.end)
		if e.isCIE {
			continue
		}
		f, err := t.parseFDE(e.offset)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}
