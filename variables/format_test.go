package variables

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// fmtFrame is a Frame over a little memory image (for pointers and
// references the formatter follows).
type fmtFrame struct {
	base uint64
	mem  []byte
}

func (m fmtFrame) ReadMemory(buf []byte, addr uint64) (int, error) {
	if addr < m.base || addr-m.base >= uint64(len(m.mem)) {
		return 0, &MemoryError{Addr: addr}
	}
	return copy(buf, m.mem[addr-m.base:]), nil
}
func (fmtFrame) Register(int) ([]byte, error) { return nil, ErrRegister }
func (fmtFrame) PC() uint64                   { return 0 }
func (fmtFrame) Exact() bool                  { return true }
func (fmtFrame) CFA() (uint64, error)         { return 0, ErrNotFound }
func (fmtFrame) Bias() uint64                 { return 0 }
func (fmtFrame) Caller() (Frame, *Reader)     { return nil, nil }

func u64(v uint64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, v); return b }

// TestFormatLikeGdb checks values against what gdb 13 prints for them
// (print, and bt's summary mode).
func TestFormatLikeGdb(t *testing.T) {
	intT := &Type{Kind: KindBase, Name: "int", Size: 4, Encoding: EncSigned}
	charT := &Type{Kind: KindBase, Name: "char", Size: 1, Encoding: EncSignedChar}
	ucharT := &Type{Kind: KindBase, Name: "unsigned char", Size: 1, Encoding: EncUnsignedChar}
	boolT := &Type{Kind: KindBase, Name: "_Bool", Size: 1, Encoding: EncBoolean}
	floatT := &Type{Kind: KindBase, Name: "float", Size: 4, Encoding: EncFloat}
	doubleT := &Type{Kind: KindBase, Name: "double", Size: 8, Encoding: EncFloat}
	ldT := &Type{Kind: KindBase, Name: "long double", Size: 16, Encoding: EncFloat}
	charP := &Type{Kind: KindPointer, Size: 8, Elem: &Type{Kind: KindConst, Elem: charT}}
	intP := &Type{Kind: KindPointer, Size: 8, Elem: intT}
	intRef := &Type{Kind: KindReference, Size: 8, Elem: intT}
	point := &Type{Kind: KindStruct, Name: "point", Size: 8, Fields: []Field{{Name: "x", Type: intT}, {Name: "y", Type: intT, Offset: 4}}}
	pointRef := &Type{Kind: KindReference, Size: 8, Elem: point}
	enumT := &Type{Kind: KindEnum, Name: "color", Size: 4, Enumerators: []Enumerator{{"RED", 0}, {"GREEN", 5}}}
	flags := &Type{Kind: KindEnum, Name: "flags", Size: 4, Enumerators: []Enumerator{{"F_A", 1}, {"F_B", 2}, {"F_C", 8}}}
	arr := func(elem *Type, n int64) *Type { return &Type{Kind: KindArray, Elem: elem, Count: n} }
	f32 := func(f float32) []byte {
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, math.Float32bits(f))
		return b
	}

	mem := fmtFrame{base: 0x1000, mem: make([]byte, 0x400)}
	copy(mem.mem, "hello \"you\"\n\x00")
	copy(mem.mem[0x100:], strings.Repeat("ab", 150)+"\x00")
	binary.LittleEndian.PutUint32(mem.mem[0x300:], 42)
	binary.LittleEndian.PutUint32(mem.mem[0x304:], 7)
	sym := func(addr uint64) string {
		if addr == 0x1300 {
			return "global"
		}
		return ""
	}
	zeros := make([]byte, 80)
	hi := make([]byte, 32)
	copy(hi, "hi")
	for _, c := range []struct {
		t       *Type
		b       []byte
		summary bool
		want    string
	}{
		{intT, u64(0xfffffffe)[:4], false, "-2"},
		{charT, []byte{'A'}, false, "65 'A'"},
		{charT, []byte{0}, false, `0 '\000'`},
		{charT, []byte{0xfb}, false, `-5 '\373'`},
		{ucharT, []byte{200}, false, `200 '\310'`},
		{charT, []byte{'\n'}, false, `10 '\n'`},
		{charT, []byte{'\''}, false, `39 '\''`},
		{boolT, []byte{1}, false, "true"},
		{boolT, []byte{0}, false, "false"},
		{floatT, f32(3.14), false, "3.1400001"},
		{floatT, f32(1.5), false, "1.5"},
		{doubleT, u64(math.Float64bits(0.1)), false, "0.10000000000000001"},
		{doubleT, u64(math.Float64bits(2)), false, "2"},
		{doubleT, u64(math.Float64bits(1e20)), false, "1e+20"},
		{doubleT, u64(math.Float64bits(1.5e-7)), false, "1.4999999999999999e-07"},
		{doubleT, u64(math.Float64bits(math.Inf(-1))), false, "-inf"},
		{ldT, append(u64(0xa000000000000000), 0xff, 0x3f, 0, 0, 0, 0, 0, 0), false, "1.25"},
		{enumT, u64(5)[:4], false, "GREEN"},
		{enumT, u64(3)[:4], false, "3"},
		{flags, u64(9)[:4], false, "(F_A | F_C)"},
		{flags, u64(0x13)[:4], false, "(F_A | F_B | unknown: 0x10)"},
		{intP, u64(0), true, "0x0"},
		{intP, u64(0x1300), true, "0x1300 <global>"},
		{charP, u64(0x1000), true, `0x1000 "hello \"you\"\n"`},
		{charP, u64(0x1100), true, `0x1100 "` + strings.Repeat("ab", 100) + `"...`},
		{charP, u64(0x9000), true, "0x9000 <error: Cannot access memory at address 0x9000>"},
		{intRef, u64(0x1300), true, "@0x1300: 42"},
		{pointRef, u64(0x1300), true, "..."},
		{pointRef, u64(0x1300), false, "@0x1300: {x = 42, y = 7}"},
		{point, append(u64(0x7)[:4], 1, 0, 0, 0), true, "..."},
		{point, append(u64(0x7)[:4], 1, 0, 0, 0), false, "{x = 7, y = 1}"},
		{arr(intT, 20), zeros, false, "{0 <repeats 20 times>}"},
		{arr(intT, 3), append(append(u64(1)[:4], u64(2)[:4]...), u64(3)[:4]...), false, "{1, 2, 3}"},
		{arr(charT, 32), hi, false, `"hi", '\000' <repeats 29 times>`},
		{arr(charT, 4), []byte("abcd"), false, `"abcd"`},
		{arr(charT, 8), []byte("nd\x00\x00\x00\x00\x00\x00"), false, `"nd\000\000\000\000\000"`},
		{arr(ucharT, 16), append([]byte{'1'}, []byte(strings.Repeat("\xff", 15))...), false, `"1", '\377' <repeats 15 times>`},
		{arr(charT, 3), []byte{0, '1', 0}, false, `"\0001"`},
	} {
		got := (*Reader)(nil).Format(Value{Type: c.t, Bytes: c.b}, nil, mem, FormatOptions{Summary: c.summary, Symbol: sym})
		if got != c.want {
			t.Errorf("%s % x (summary %v): got %s, want %s", c.t, c.b, c.summary, got, c.want)
		}
	}
	if got := (*Reader)(nil).Format(Value{Type: intT}, ErrOptimizedOut, nil, FormatOptions{}); got != "<optimized out>" {
		t.Errorf("optimized out: %s", got)
	}
	// In a backtrace, an optimized-out aggregate is "..." (gdb decides on
	// the type first).
	if got := (*Reader)(nil).Format(Value{Type: point}, ErrOptimizedOut, nil, FormatOptions{Summary: true}); got != "..." {
		t.Errorf("optimized-out struct, summary: %s", got)
	}
	if got := (*Reader)(nil).Format(Value{Type: intT}, &MemoryError{Addr: 0x10}, nil, FormatOptions{}); got != "<error reading variable: Cannot access memory at address 0x10>" {
		t.Errorf("memory error: %s", got)
	}
}

// FuzzFormat: any bytes under any of a set of types format without
// panicking, and the text stays bounded.
func FuzzFormat(f *testing.F) {
	intT := &Type{Kind: KindBase, Name: "int", Size: 4, Encoding: EncSigned}
	charT := &Type{Kind: KindBase, Name: "char", Size: 1, Encoding: EncSignedChar}
	node := &Type{Kind: KindStruct, Name: "node", Size: 24}
	node.Fields = []Field{{Name: "v", Type: intT}, {Name: "bits", Type: intT, Offset: 4, BitSize: 3, BitOffset: 32},
		{Name: "next", Type: &Type{Kind: KindPointer, Size: 8, Elem: node}, Offset: 8},
		{Name: "name", Type: &Type{Kind: KindArray, Elem: charT, Count: 8}, Offset: 16}}
	types := []*Type{intT, charT, node,
		{Kind: KindBase, Size: 4, Encoding: EncFloat}, {Kind: KindBase, Size: 8, Encoding: EncFloat},
		{Kind: KindBase, Size: 16, Encoding: EncFloat}, {Kind: KindBase, Size: 16, Encoding: EncSigned},
		{Kind: KindPointer, Size: 8, Elem: charT}, {Kind: KindReference, Size: 8, Elem: node},
		{Kind: KindArray, Elem: intT, Count: 64}, {Kind: KindArray, Elem: charT, Count: 300},
		{Kind: KindEnum, Size: 4, Enumerators: []Enumerator{{"A", 1}, {"B", 2}}}}
	f.Add(uint8(0), []byte{1, 2, 3, 4}, []byte("abc"))
	f.Add(uint8(2), make([]byte, 24), []byte("hello\x00"))
	f.Add(uint8(10), []byte("xxxxxxxxxxxxxxxxxxxxxxxxx"), []byte{})
	f.Fuzz(func(t *testing.T, which uint8, b, memory []byte) {
		typ := types[int(which)%len(types)]
		mem := fmtFrame{base: 0, mem: memory}
		for _, summary := range []bool{false, true} {
			s := (*Reader)(nil).Format(Value{Type: typ, Bytes: b}, nil, mem, FormatOptions{Summary: summary})
			if len(s) > maxFormatLen+4096 {
				t.Fatalf("%d bytes of text", len(s))
			}
		}
	})
}
