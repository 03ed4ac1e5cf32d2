package variables

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	dw "github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// memFrame is a frame over a small byte image at a fixed address with fixed
// registers: enough to run any location expression without a target.
type memFrame struct {
	base uint64
	mem  []byte
}

func (m *memFrame) ReadMemory(buf []byte, addr uint64) (int, error) {
	if addr < m.base || addr-m.base >= uint64(len(m.mem)) {
		return 0, errors.New("unmapped")
	}
	return copy(buf, m.mem[addr-m.base:]), nil
}
func (m *memFrame) Register(reg int) ([]byte, error) {
	if reg > 32 {
		return nil, errors.New("no such register")
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, m.base+uint64(reg)*8)
	return b, nil
}
func (m *memFrame) PC() uint64               { return 0x1000 }
func (m *memFrame) Exact() bool              { return true }
func (m *memFrame) CFA() (uint64, error)     { return m.base + 64, nil }
func (m *memFrame) Bias() uint64             { return 0 }
func (m *memFrame) Caller() (Frame, *Reader) { return nil, nil }

// FuzzLocation runs arbitrary bytes as a variable's location expression (in
// a function scope with a frame base and call sites) and as location lists
// in both formats: errors are fine, panics, hangs and garbage sizes are not.
func FuzzLocation(f *testing.F) {
	for _, s := range [][]byte{
		{0x91, 0x6c},                         // fbreg -20
		{0x53},                               // reg3
		{0x76, 0x00, 0x06},                   // breg6 0; deref
		{0xa3, 0x01, 0x55, 0x9f},             // entry_value(reg5); stack_value
		{0x50, 0x93, 0x04, 0x51, 0x93, 0x04}, // reg0 piece 4 reg1 piece 4
		{0x93, 0x04, 0x30, 0x9f, 0x93, 0x04}, // empty piece; lit0 stack_value piece
		{0x9e, 0x04, 1, 2, 3, 4},             // implicit_value
		{0x2f, 0xfd, 0xff},                   // skip backwards forever
		{0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x50, 0x00},
		// GNU split DWARF 4 list: view pair, start_length [0] len 0x33 reg5, offset pair, end.
		{0x09, 0x00, 0x00, 0x03, 0x00, 0x33, 0, 0, 0, 0x01, 0x00, 0x55, 0x04, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0x01, 0x00, 0x53, 0x00},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr []byte) {
		r := &Reader{units: []unitInfo{{version: 5, dieRead: true}}, loc: expr, loclists: expr, addr: expr}
		fn := &Scope{Kind: ScopeFunction, frameBase: &Location{Kind: LocExpr, Expr: []byte{0x9c}}}
		m := &memFrame{base: 0x7000, mem: make([]byte, 256)}
		for _, ty := range []*Type{
			{Kind: KindBase, Size: 4, Encoding: EncSigned, Count: -1},
			{Kind: KindArray, Size: -1, Count: 3, Elem: &Type{Kind: KindBase, Size: 8, Count: -1}},
		} {
			v := &Variable{Name: "v", Type: ty, Loc: Location{Kind: LocExpr, Expr: expr}, Scope: fn}
			val, err := r.Read(v, m)
			if err == nil && val.Bytes != nil && int64(len(val.Bytes)) != ty.ByteSize() {
				t.Fatalf("%d bytes for a %d-byte type", len(val.Bytes), ty.ByteSize())
			}
		}
		u := &r.units[0]
		addrx := func(i uint64) (uint64, error) { return r.addrx(u, i) }
		if l, _ := dw.LocLists(expr, 0, 8, 0, addrx); len(l) > dw.MaxListEntries+1 {
			t.Fatal("unbounded list")
		}
		if l, _ := dw.LocV4(expr, 0, 8, 0); len(l) > dw.MaxListEntries+1 {
			t.Fatal("unbounded list")
		}
		if l, _ := dw.LocGNUSplit(expr, 0, 0, addrx); len(l) > dw.MaxListEntries+1 {
			t.Fatal("unbounded list")
		}
		if l, _ := dw.RangesV4(expr, 0, 8, 0x1000, nil); len(l) > dw.MaxListEntries+1 {
			t.Fatal("unbounded ranges")
		}
	})
}

// FuzzReader decodes a real test program's DWARF with .debug_info bytes
// changed by the fuzzer: every query must end with a result or an error.
func FuzzReader(f *testing.F) {
	exe, err := testprog.BuildE(testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O2", "-gdwarf-5"}, Name: "ex_vars_fuzz"})
	if err != nil {
		f.Skip(err)
	}
	b, err := symbols.Open(exe, nil)
	if err != nil {
		f.Fatal(err)
	}
	sec := func(n string) []byte { s, _ := b.DWARFSection(n); return s }
	base := Sections{Info: sec(".debug_info"), Abbrev: sec(".debug_abbrev"), Str: sec(".debug_str"),
		Line: sec(".debug_line"), LineStr: sec(".debug_line_str"), RngLists: sec(".debug_rnglists"),
		LocLists: sec(".debug_loclists"), Addr: sec(".debug_addr"), StrOffsets: sec(".debug_str_offsets")}
	f.Add(uint32(0), []byte{0xff})
	f.Add(uint32(12), []byte{0x00, 0x00})
	f.Add(uint32(40), []byte{0x13, 0x37, 0x01})
	if _, err := os.Stat(exe); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, at uint32, patch []byte) {
		s := base
		info := append([]byte(nil), s.Info...)
		if len(info) > 0 {
			copy(info[int(at)%len(info):], patch)
		}
		s.Info = info
		r, err := NewFromSections(s)
		if err != nil {
			return
		}
		for _, pc := range []uint64{0x1000, 0x1150, 0x11d0, 0x11e0, 0x1250} {
			scopes, _ := r.ScopesAt(pc)
			for _, sc := range scopes {
				for _, v := range sc.Vars {
					_ = v.Type.String()
					_, _ = r.Read(v, &memFrame{base: 0x7000, mem: make([]byte, 64)})
				}
			}
		}
		for _, n := range []string{"g_n1", "g_arr", "g_bits", "g_outer"} {
			if vs, err := r.Globals(n); err == nil {
				_ = vs[0].Type.String()
				_ = vs[0].Type.ByteSize()
			}
		}
		_, _ = r.TypesByName("point_t")
	})
}

// FuzzTypeUnits feeds arbitrary .debug_types bytes to a Reader's DWARF 4
// type units and its type lookups.
func FuzzTypeUnits(f *testing.F) {
	exe, err := testprog.BuildE(testprog.Spec{Sources: []string{"ex_cxx.cc"}, Flags: []string{"-O0", "-gdwarf-4", "-fdebug-types-section"}, Name: "ex_cxx_fuzz"})
	if err != nil {
		f.Skip(err)
	}
	b, err := symbols.Open(exe, nil)
	if err != nil {
		f.Fatal(err)
	}
	sec := func(n string) []byte { s, _ := b.DWARFSection(n); return s }
	base := Sections{Info: sec(".debug_info"), Abbrev: sec(".debug_abbrev"), Str: sec(".debug_str"),
		Line: sec(".debug_line"), Ranges: sec(".debug_ranges"), Loc: sec(".debug_loc")}
	types := sec(".debug_types")
	f.Add(types[:min(len(types), 200)])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{19, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xff, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := base
		s.Types = data
		r, err := NewFromSections(s)
		if err != nil {
			return
		}
		for _, n := range []string{"g_derived", "g_buf", "g_multi"} {
			if vs, err := r.Globals(n); err == nil && vs[0].Type != nil {
				_ = vs[0].Type.String()
			}
		}
	})
}
