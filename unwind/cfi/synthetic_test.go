package cfi

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/sondedbg/sonde/internal/leb128"
)

// Hand-assembled sections for what compilers on this machine do not emit:
// 64-bit DWARF, the old "eh" augmentation, indirect and aligned pointers,
// datarel search tables, and damaged input.

type asm struct{ b []byte }

func (a *asm) u8(v ...byte)  { a.b = append(a.b, v...) }
func (a *asm) u32(v uint32)  { a.b = binary.LittleEndian.AppendUint32(a.b, v) }
func (a *asm) u64(v uint64)  { a.b = binary.LittleEndian.AppendUint64(a.b, v) }
func (a *asm) str(s string)  { a.b = append(append(a.b, s...), 0) }
func (a *asm) uleb(v uint64) { a.b = leb128.AppendUint(a.b, v) }
func (a *asm) sleb(v int64)  { a.b = leb128.AppendInt(a.b, v) }
func (a *asm) len() int      { return len(a.b) }

// entry64 appends a DWARF64 entry: 0xffffffff, 8-byte length, body.
func (a *asm) entry64(body []byte) {
	a.u32(0xffffffff)
	a.u64(uint64(len(body)))
	a.u8(body...)
}

func (a *asm) entry32(body []byte) {
	a.u32(uint32(len(body)))
	a.u8(body...)
}

func TestDebugFrame64(t *testing.T) {
	var cie asm
	cie.u64(^uint64(0)) // CIE id
	cie.u8(4)           // version
	cie.str("")
	cie.u8(8, 0) // address size, segment selector size
	cie.uleb(1)
	cie.sleb(-8)
	cie.uleb(16)
	cie.u8(0x0c, 7, 8, 0x90, 1) // def_cfa rsp+8; offset ra, cfa-8
	var sec asm
	sec.entry64(cie.b)
	var fde asm
	fde.u64(0) // CIE at offset 0
	fde.u64(0x401000)
	fde.u64(0x40)
	fde.u8(0x41, 0x0e, 16, 0x86, 2) // advance 1; def_cfa_offset 16; rbp at cfa-16
	fde.u8(0x0a)                    // remember_state
	fde.u8(0x44, 0x0d, 6)           // advance 4; def_cfa_register rbp
	fde.u8(0x48, 0x0b)              // advance 8; restore_state (CFA back to rsp+16)
	sec.entry64(fde.b)
	tab := NewDebugFrame(sec.b, Options{})
	cases := []struct {
		pc  uint64
		cfa Rule
		rbp RuleKind
	}{
		{0x401000, Rule{Kind: RuleCFARegOffset, Reg: 7, Offset: 8}, RuleUnspecified},
		{0x401001, Rule{Kind: RuleCFARegOffset, Reg: 7, Offset: 16}, RuleOffset},
		{0x401005, Rule{Kind: RuleCFARegOffset, Reg: 6, Offset: 16}, RuleOffset},
		{0x40100d, Rule{Kind: RuleCFARegOffset, Reg: 7, Offset: 16}, RuleOffset},
	}
	for _, c := range cases {
		var row Row
		if err := tab.RowFor(c.pc, &row); err != nil {
			t.Fatalf("%#x: %v", c.pc, err)
		}
		if row.CFA.Kind != c.cfa.Kind || row.CFA.Reg != c.cfa.Reg || row.CFA.Offset != c.cfa.Offset || row.Regs[6].Kind != c.rbp {
			t.Errorf("%#x: CFA %v rbp %v, want %v %v", c.pc, row.CFA, row.Regs[6].Kind, c.cfa, c.rbp)
		}
		if row.Regs[16].Kind != RuleOffset || row.Regs[16].Offset != -8 {
			t.Errorf("%#x: ra %v", c.pc, row.Regs[16])
		}
	}
	if _, err := tab.FindFDE(0x401040); !errors.Is(err, ErrNoFDE) {
		t.Errorf("past the FDE: %v", err)
	}
}

// ehSection builds an .eh_frame at addr with one CIE (augmentation aug,
// augmentation data augData) and one FDE for [0x1000, 0x1100) encoded with
// pcrel|sdata4.
func ehSection(aug string, augData []byte, fdeAug []byte, addr uint64) []byte {
	var cie asm
	cie.u32(0)
	cie.u8(1)
	cie.str(aug)
	if len(aug) >= 2 && aug[:2] == "eh" {
		cie.u64(0xdeadbeef) // the old exception-table pointer
	}
	cie.uleb(1)
	cie.sleb(-8)
	cie.u8(16)
	if len(aug) > 0 && aug[0] == 'z' || len(aug) > 2 && aug[2] == 'z' {
		cie.uleb(uint64(len(augData)))
		cie.u8(augData...)
	}
	cie.u8(0x0c, 7, 8, 0x90, 1)
	var sec asm
	sec.entry32(cie.b)
	start := sec.len()
	var fde asm
	fde.u32(uint32(start + 4)) // CIE pointer: back to offset 0
	pcField := uint64(start + 8)
	fde.u32(uint32(int32(0x1000 - int64(addr+pcField))))
	fde.u32(0x100)
	if fdeAug != nil {
		fde.uleb(uint64(len(fdeAug)))
		fde.u8(fdeAug...)
	}
	fde.u8(0x44, 0x0e, 32) // advance 4; def_cfa_offset 32
	sec.entry32(fde.b)
	sec.u32(0) // terminator
	return sec.b
}

func TestEHFrameAugmentations(t *testing.T) {
	const addr = 0x2000
	cases := []struct {
		name    string
		aug     string
		augData []byte
		fdeAug  []byte
		signal  bool
	}{
		{"zR", "zR", []byte{0x1b}, []byte{}, false},
		{"zPLR indirect personality", "zPLR", []byte{0x9b, 0, 0, 0, 0, 0x1b, 0x1b}, []byte{0, 0, 0, 0}, false},
		{"zPLR aligned personality", "zPLR", []byte{0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1b, 0x1b}, []byte{0, 0, 0, 0}, false},
		{"zRS", "zRS", []byte{0x1b}, []byte{}, true},
		{"zR with unknown trailing letter", "zRX", []byte{0x1b, 0x55}, []byte{}, false},
	}
	for _, c := range cases {
		tab := NewEHFrame(ehSection(c.aug, c.augData, c.fdeAug, addr), Options{Addr: addr})
		var row Row
		if err := tab.RowFor(0x1050, &row); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if row.CFA.Offset != 32 || row.SignalFrame != c.signal {
			t.Errorf("%s: CFA %v signal %v", c.name, row.CFA, row.SignalFrame)
		}
	}
	// The 'eh' augmentation without 'z' carries no FDE encoding: absptr.
	var sec asm
	var cie asm
	cie.u32(0)
	cie.u8(1)
	cie.str("eh")
	cie.u64(0)
	cie.uleb(1)
	cie.sleb(-8)
	cie.u8(16)
	cie.u8(0x0c, 7, 8)
	sec.entry32(cie.b)
	var fde asm
	fde.u32(uint32(sec.len() + 4))
	fde.u64(0x1000)
	fde.u64(0x10)
	sec.entry32(fde.b)
	var row Row
	if err := NewEHFrame(sec.b, Options{}).RowFor(0x1008, &row); err != nil || row.CFA.Offset != 8 {
		t.Errorf("eh augmentation: %v %v", row.CFA, err)
	}
}

// TestEHFrameHdr checks lookups through a hand-made search table, including
// a pc before the first entry and after the last FDE.
func TestEHFrameHdr(t *testing.T) {
	const ehAddr, hdrAddr = 0x3000, 0x2f00
	eh := ehSection("zR", []byte{0x1b}, []byte{}, ehAddr)
	var hdr asm
	hdr.u8(1, 0x1b, 0x03, 0x3b)             // version, eh_frame_ptr pcrel sdata4, count udata4, table datarel sdata4
	hdr.u32(rel32(ehAddr - (hdrAddr + 4)))  // eh_frame_ptr
	hdr.u32(1)                              // count
	hdr.u32(rel32(0x1000 - hdrAddr))        // initial location (datarel: from hdr start)
	hdr.u32(rel32(ehAddr + 0x16 - hdrAddr)) // the FDE follows the 0x16-byte CIE // FDE address
	tab := NewEHFrame(eh, Options{Addr: ehAddr, Hdr: hdr.b, HdrAddr: hdrAddr})
	if !tab.HasSearchTable() {
		t.Fatal("search table not used")
	}
	var row Row
	if err := tab.RowFor(0x10ff, &row); err != nil || row.CFA.Offset != 32 {
		t.Errorf("inside: %v %v", row.CFA, err)
	}
	for _, pc := range []uint64{0xfff, 0x1100} {
		if err := tab.RowFor(pc, &row); !errors.Is(err, ErrNoFDE) {
			t.Errorf("%#x: %v", pc, err)
		}
	}
	// A table entry pointing outside .eh_frame is reported, not followed.
	binary.LittleEndian.PutUint32(hdr.b[16:], 0x7fffffff)
	tab = NewEHFrame(eh, Options{Addr: ehAddr, Hdr: hdr.b, HdrAddr: hdrAddr})
	var e *Error
	if err := tab.RowFor(0x1050, &row); !errors.Is(err, ErrBadHeader) || !errors.As(err, &e) || e.Section != ".eh_frame_hdr" {
		t.Errorf("bad table entry: %v", err)
	}
}

func TestErrorsNameOffsets(t *testing.T) {
	eh := ehSection("zR", []byte{0x1b}, []byte{}, 0)
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		want   error
		offset uint64
	}{
		// Layout: CIE at 0 (0x16 bytes), FDE at 0x16, its instructions at 0x27.
		{"lying FDE length", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[0x16:], 0x1000); return b }, ErrBadLength, 0x16},
		{"unknown opcode", func(b []byte) []byte { b[0x27] = 0x3f; return b }, ErrBadOpcode, 0x27},
		{"truncated operand", func(b []byte) []byte { b[0x27] = 0x0f; b[0x28] = 0x7f; return b }, ErrTruncated, 0x27},
		{"restore_state without remember", func(b []byte) []byte { b[0x27] = 0x0b; return b }, ErrStateStack, 0x27},
	}
	for _, c := range cases {
		b := c.mutate(append([]byte(nil), eh...))
		var row Row
		err := NewEHFrame(b, Options{}).RowFor(0x1050, &row)
		if c.want == ErrBadLength {
			err = NewEHFrame(b, Options{}).ForEachFDE(func(FDE) error { return nil })
		}
		var e *Error
		if !errors.Is(err, c.want) || !errors.As(err, &e) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if e.Offset != c.offset {
			t.Errorf("%s: offset %#x, want %#x (%v)", c.name, e.Offset, c.offset, err)
		}
	}
}

// rel32 encodes a signed 32-bit field (constants may be negative).
func rel32(v int64) uint32 { return uint32(v) }

func TestBadCIEVersion(t *testing.T) {
	b := ehSection("zR", []byte{0x1b}, []byte{}, 0)
	b[8] = 2
	err := NewEHFrame(b, Options{}).ForEachFDE(func(FDE) error { return nil })
	var e *Error
	if !errors.Is(err, ErrBadVersion) || !errors.As(err, &e) || e.Offset != 0 {
		t.Errorf("got %v", err)
	}
	// Lookups skip the FDEs of a bad CIE instead of failing the whole section.
	var row Row
	if err := NewEHFrame(b, Options{}).RowFor(0x1050, &row); !errors.Is(err, ErrNoFDE) {
		t.Errorf("lookup: %v", err)
	}
}

// TestIndirectPointers: DW_EH_PE_indirect personality, LSDA and FDE start
// are dereferenced through Options.ReadPointer.
func TestIndirectPointers(t *testing.T) {
	// Personality 0x9b (indirect pcrel sdata4) at 0; LSDA 0x83 (indirect udata4); FDE 0x83 too.
	var cie asm
	cie.u32(0)
	cie.u8(1)
	cie.str("zPLR")
	cie.uleb(1)
	cie.sleb(-8)
	cie.u8(16)
	cie.uleb(7)
	cie.u8(0x9b)
	cie.u32(0x100) // pcrel: address of this field + 0x100
	cie.u8(0x83, 0x83)
	cie.u8(0x0c, 7, 8)
	var sec asm
	sec.entry32(cie.b)
	var fde asm
	fde.u32(uint32(sec.len() + 4))
	fde.u32(0x5000) // -> [0x5000] = 0x1000
	fde.u32(0x100)
	fde.uleb(4)
	fde.u32(0x6000) // -> [0x6000] = 0x7777
	sec.entry32(fde.b)
	mem := map[uint64]uint64{0x5000: 0x1000, 0x6000: 0x7777, 0x13 + 0x100: 0x4242}
	read := func(a uint64) (uint64, error) {
		if v, ok := mem[a]; ok {
			return v, nil
		}
		return 0, errors.New("unmapped")
	}
	f, err := NewEHFrame(sec.b, Options{ReadPointer: read}).FindFDE(0x1080)
	if err != nil {
		t.Fatal(err)
	}
	if f.PCBegin != 0x1000 || f.LSDA != 0x7777 || f.CIE.Personality != 0x4242 || f.CIE.PersonalityIndirect {
		t.Errorf("FDE %#x LSDA %#x personality %#x (indirect %v)", f.PCBegin, f.LSDA, f.CIE.Personality, f.CIE.PersonalityIndirect)
	}
	// Without ReadPointer the FDE cannot be placed: reported, not guessed.
	var e *Error
	if err := NewEHFrame(sec.b, Options{}).ForEachFDE(func(FDE) error { return nil }); !errors.As(err, &e) || !errors.Is(err, ErrBadEncoding) {
		t.Errorf("without ReadPointer: %v", err)
	}
}
