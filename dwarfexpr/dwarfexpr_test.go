package dwarfexpr

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/sondedbg/sonde/internal/leb128"
)

// fakeTarget is a flat memory image and a register file. (Plain data, not a
// mock of anything: the evaluator only ever sees these two interfaces.)
type fakeTarget struct {
	base uint64
	mem  []byte
	regs map[uint64]uint64
}

func (t *fakeTarget) ReadMemory(buf []byte, addr uint64) (int, error) {
	if addr < t.base || addr-t.base >= uint64(len(t.mem)) {
		return 0, nil
	}
	return copy(buf, t.mem[addr-t.base:]), nil
}

func (t *fakeTarget) Register(reg uint64) (uint64, error) {
	if v, ok := t.regs[reg]; ok {
		return v, nil
	}
	return 0, ErrUnknownRegister
}

func newTarget() *fakeTarget {
	t := &fakeTarget{base: 0x1000, mem: make([]byte, 256), regs: map[uint64]uint64{6: 0x1040, 7: 0x1080, 16: 0x100b}}
	for i := 0; i < 32; i++ {
		binary.LittleEndian.PutUint64(t.mem[8*i:], 0x1000+uint64(8*i)*2)
	}
	return t
}

func cat(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case int:
			b = append(b, byte(p))
		case byte:
			b = append(b, p)
		case []byte:
			b = append(b, p...)
		}
	}
	return b
}

func TestValues(t *testing.T) {
	tests := []struct {
		name string
		expr []byte
		push []uint64
		want uint64
		kind Kind
	}{
		{"lit", cat(OpLit0 + 7), nil, 7, KindMemory},
		{"consts neg", cat(OpConsts, leb128.AppendInt(nil, -5), OpStackValue), nil, uint64(math.MaxUint64 - 4), KindValue},
		{"breg plus", cat(OpBreg0+6, leb128.AppendInt(nil, -8)), nil, 0x1038, KindMemory},
		{"bregx deref", cat(OpBregx, leb128.AppendUint(nil, 7), leb128.AppendInt(nil, 0), OpDeref), nil, 0x1000 + 0x80*2, KindMemory},
		{"deref_size", cat(OpBreg0+7, leb128.AppendInt(nil, 0), OpDerefSize, 1), nil, 0x00, KindMemory},
		{"plus_uconst", cat(OpLit0+1, OpPlusUconst, leb128.AppendUint(nil, 300)), nil, 301, KindMemory},
		{"div signed", cat(OpConsts, leb128.AppendInt(nil, -9), OpLit0+2, OpDiv, OpStackValue), nil, uint64(math.MaxUint64 - 3), KindValue},
		{"mod", cat(OpLit0+9, OpLit0+4, OpMod, OpStackValue), nil, 1, KindValue},
		{"shra", cat(OpConsts, leb128.AppendInt(nil, -16), OpLit0+2, OpShra, OpStackValue), nil, uint64(math.MaxUint64 - 3), KindValue},
		{"shr", cat(OpConsts, leb128.AppendInt(nil, -16), OpConstu, leb128.AppendUint(nil, 60), OpShr, OpStackValue), nil, 15, KindValue},
		{"lt signed", cat(OpConsts, leb128.AppendInt(nil, -1), OpLit0+1, OpLt, OpStackValue), nil, 1, KindValue},
		{"rot", cat(OpLit0+1, OpLit0+2, OpLit0+3, OpRot, OpDrop, OpDrop, OpStackValue), nil, 3, KindValue},
		{"pick over swap", cat(OpLit0+1, OpLit0+2, OpPick, 1, OpOver, OpSwap, OpMinus, OpStackValue), nil, 1, KindValue},
		{"pushed CFA", cat(OpLit0+8, OpMinus), []uint64{0x2000}, 0x1ff8, KindMemory},
		// The PLT rule ld emits: rsp+8 + ((rip&15)>=11)*8, with rip = 0x100b.
		{"plt", cat(OpBreg0+7, leb128.AppendInt(nil, 8), OpBreg0+16, leb128.AppendInt(nil, 0), OpLit0+15, OpAnd, OpLit0+11, OpGe, OpLit0+3, OpShl, OpPlus),
			nil, 0x1080 + 8 + 8, KindMemory},
		{"bra taken", cat(OpLit0+1, OpBra, 2, 0, OpLit0+5, OpStackValue, OpLit0+9, OpStackValue), nil, 9, KindValue},
		{"skip", cat(OpSkip, 1, 0, OpLit0+5, OpLit0+6), nil, 6, KindMemory},
		{"loop sums 1..5", cat(OpLit0+0, OpLit0+5, // acc n
			OpDup, OpRot, OpPlus, OpSwap, OpLit0+1, OpMinus, // acc+n n-1
			OpDup, OpBra, 0xf6, 0xff, OpDrop, OpStackValue), nil, 15, KindValue},
		{"abs neg not", cat(OpConsts, leb128.AppendInt(nil, -3), OpAbs, OpNeg, OpNot, OpStackValue), nil, 2, KindValue},
		{"const8u", cat(OpConst8u, []byte{1, 2, 3, 4, 5, 6, 7, 8}), nil, 0x0807060504030201, KindMemory},
		{"const2s", cat(OpConst2s, []byte{0xfe, 0xff}, OpStackValue), nil, uint64(math.MaxUint64 - 1), KindValue},
		{"register", cat(OpReg0 + 3), nil, 3, KindRegister},
		{"regx", cat(OpRegx, leb128.AppendUint(nil, 17)), nil, 17, KindRegister},
		{"empty", nil, nil, 0, KindEmpty},
		{"nop", cat(OpNop, OpLit0+2), nil, 2, KindMemory},
	}
	var m Machine
	for _, tc := range tests {
		res, err := m.Eval(tc.expr, newTarget(), nil, tc.push...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if res.Kind != tc.kind {
			t.Errorf("%s: kind %v, want %v", tc.name, res.Kind, tc.kind)
			continue
		}
		var got uint64
		switch res.Kind {
		case KindMemory:
			got = res.Address
		case KindValue:
			got = res.Value.Bits
		case KindRegister:
			got = res.Register
		}
		if got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		expr []byte
		want error
		off  int
	}{
		{"underflow", cat(OpLit0, OpPlus), ErrStackUnderflow, 1},
		{"truncated const", cat(OpConst4u, 1, 2), ErrTruncated, 0},
		{"truncated leb", cat(OpConstu, 0x80), ErrTruncated, 0},
		{"bad op", cat(OpLit0, 0xff), ErrBadOpcode, 1},
		{"div zero", cat(OpLit0+1, OpLit0, OpDiv), ErrDivideByZero, 2},
		{"branch out", cat(OpSkip, 0x10, 0), ErrBadBranch, 0},
		{"infinite loop", cat(OpSkip, 0xfd, 0xff), ErrStepLimit, 0},
		{"unknown register", cat(OpBreg0+1, 0), ErrUnknownRegister, 0},
		{"unreadable", cat(OpLit0, OpDeref), ErrMemory, 1},
		{"fbreg no context", cat(OpFbreg, 0), ErrNeedsContext, 0},
		{"entry_value no context", cat(OpEntryValue, 1, OpReg0+5, OpStackValue), ErrNeedsContext, 0},
		{"reg then op", cat(OpReg0+1, OpLit0), ErrBadComposition, 1},
		{"overflow", func() []byte {
			var b []byte
			for i := 0; i < StackLimit+1; i++ {
				b = append(b, OpLit0)
			}
			return b
		}(), ErrStackOverflow, StackLimit},
	}
	for _, tc := range tests {
		_, err := Eval(tc.expr, newTarget(), nil)
		var e *Error
		if !errors.Is(err, tc.want) || !errors.As(err, &e) || e.Offset != tc.off {
			t.Errorf("%s: got %v, want %v at offset %d", tc.name, err, tc.want, tc.off)
		}
	}
}

func TestPieces(t *testing.T) {
	// rax in the low 4 bytes, optimized-out middle, memory at rbp-8, a constant.
	expr := cat(OpReg0, OpPiece, leb128.AppendUint(nil, 4), OpPiece, leb128.AppendUint(nil, 2), OpBreg0+6, leb128.AppendInt(nil, -8), OpPiece, leb128.AppendUint(nil, 8),
		OpLit0+7, OpStackValue, OpBitPiece, leb128.AppendUint(nil, 3), leb128.AppendUint(nil, 1), OpImplicitValue, leb128.AppendUint(nil, 2), 0xaa, 0xbb, OpPiece, leb128.AppendUint(nil, 2))
	res, err := Eval(expr, newTarget(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind       Kind
		size, offs uint64
	}{{KindRegister, 32, 0}, {KindEmpty, 16, 0}, {KindMemory, 64, 0}, {KindValue, 3, 1}, {KindImplicit, 16, 0}}
	if len(res.Pieces) != len(want) {
		t.Fatalf("%d pieces, want %d: %+v", len(res.Pieces), len(want), res.Pieces)
	}
	for i, w := range want {
		p := res.Pieces[i]
		if p.Kind != w.kind || p.SizeBits != w.size || p.OffsetBits != w.offs {
			t.Errorf("piece %d: %+v, want %+v", i, p, w)
		}
	}
	if res.Pieces[2].Address != 0x1038 || res.Pieces[3].Value.Bits != 7 || string(res.Pieces[4].Bytes) != "\xaa\xbb" {
		t.Errorf("piece contents wrong: %+v", res.Pieces)
	}
	// Operators after the last piece are an error, not silently dropped.
	if _, err := Eval(cat(OpReg0, OpPiece, leb128.AppendUint(nil, 8), OpLit0), newTarget(), nil); !errors.Is(err, ErrBadComposition) {
		t.Errorf("trailing operator: %v", err)
	}
}

func TestCallbacks(t *testing.T) {
	cfg := &Config{
		FrameBase:  func() (uint64, error) { return 0x5000, nil },
		CFA:        func() (uint64, error) { return 0x6000, nil },
		TLSAddress: func(off uint64) (uint64, error) { return 0x7000 + off, nil },
		DebugAddr:  func(i uint64) (uint64, error) { return 0x8000 + i*8, nil },
		DebugConst: func(i uint64) (uint64, error) { return 0x100 + i*8, nil },
		EntryValue: func(e []byte) (Value, error) {
			if len(e) != 1 || e[0] != OpReg0+5 {
				return Value{}, errors.New("unexpected entry expression")
			}
			return Value{Bits: 42}, nil
		},
		Call: func(off uint64, ref bool) ([]byte, error) {
			if off == 0x30 && !ref {
				return []byte{OpLit0 + 4, OpPlus}, nil
			}
			return []byte{OpCall2, 0x31, 0}, nil // recursion: must hit the call limit
		},
		ParameterRef:  func(off uint64) (uint64, error) { return off + 1, nil },
		ObjectAddress: func() (uint64, error) { return 0x9000, nil },
		AddrBias:      0x100000,
		BaseType: func(off uint64) (BaseType, error) {
			switch off {
			case 0x10:
				return BaseType{Size: 4, Encoding: EncodingSigned}, nil
			case 0x20:
				return BaseType{Size: 8, Encoding: EncodingFloat}, nil
			case 0x28:
				return BaseType{Size: 1, Encoding: EncodingUnsigned}, nil
			}
			return BaseType{}, errors.New("no such type")
		},
	}
	tests := []struct {
		name string
		expr []byte
		want uint64
	}{
		{"fbreg", cat(OpFbreg, leb128.AppendInt(nil, -16)), 0x4ff0},
		{"call_frame_cfa", cat(OpCallFrameCFA), 0x6000},
		{"tls", cat(OpConstu, leb128.AppendUint(nil, 0x10), OpFormTLSAddress), 0x7010},
		{"gnu tls", cat(OpConstu, leb128.AppendUint(nil, 0x10), OpGNUPushTLSAddress), 0x7010},
		{"addrx", cat(OpAddrx, leb128.AppendUint(nil, 2)), 0x8010},
		{"gnu addr_index", cat(OpGNUAddrIndex, leb128.AppendUint(nil, 2)), 0x8010},
		// constx reads the same table but is no address: no bias (TLS offsets).
		{"constx", cat(OpConstx, leb128.AppendUint(nil, 2), OpStackValue), 0x110},
		{"gnu const_index tls", cat(OpGNUConstIndex, leb128.AppendUint(nil, 1), OpGNUPushTLSAddress), 0x7108},
		{"addr biased", cat(OpAddr, []byte{0, 0x10, 0, 0, 0, 0, 0, 0}), 0x101000},
		{"entry_value", cat(OpEntryValue, leb128.AppendUint(nil, 1), OpReg0+5, OpLit0+1, OpPlus, OpStackValue), 43},
		{"gnu entry_value", cat(OpGNUEntryValue, leb128.AppendUint(nil, 1), OpReg0+5, OpStackValue), 42},
		{"call2", cat(OpLit0+1, OpCall2, 0x30, 0), 5},
		{"parameter_ref", cat(OpGNUParameterRef, []byte{9, 0, 0, 0}, OpStackValue), 10},
		{"object address", cat(OpPushObjectAddress), 0x9000},
		// (int32)-3 converted to double, times 2.5, converted back to int32: -7.
		{"typed float", cat(OpConstType, leb128.AppendUint(nil, 0x10), 4, []byte{0xfd, 0xff, 0xff, 0xff}, OpConvert, leb128.AppendUint(nil, 0x20),
			OpConstType, leb128.AppendUint(nil, 0x20), 8, func() []byte {
				b := make([]byte, 8)
				binary.LittleEndian.PutUint64(b, math.Float64bits(2.5))
				return b
			}(), OpMul, OpConvert, leb128.AppendUint(nil, 0x10), OpConvert, leb128.AppendUint(nil, 0), OpStackValue), 0xfffffffffffffff9},
		{"regval_type", cat(OpRegvalType, leb128.AppendUint(nil, 6), leb128.AppendUint(nil, 0x28), OpStackValue), 0x40},
		{"deref_type", cat(OpBreg0+6, leb128.AppendInt(nil, 0), OpDerefType, 1, leb128.AppendUint(nil, 0x28), OpStackValue), 0x80},
		{"reinterpret", cat(OpConstType, leb128.AppendUint(nil, 0x20), 8, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, OpReinterpret, leb128.AppendUint(nil, 0), OpStackValue), 0x3ff0000000000000},
	}
	for _, tc := range tests {
		res, err := Eval(tc.expr, newTarget(), cfg)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got, _ := res.Word(); got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if _, err := Eval(cat(OpCall2, 0x31, 0), newTarget(), cfg); !errors.Is(err, ErrStepLimit) {
		t.Errorf("recursive call2: %v", err)
	}
	// Typed operands of different types do not mix.
	if _, err := Eval(cat(OpConstType, leb128.AppendUint(nil, 0x10), 4, []byte{1, 0, 0, 0}, OpLit0+1, OpPlus), newTarget(), cfg); !errors.Is(err, ErrType) {
		t.Errorf("mixed types: %v", err)
	}
	res, err := Eval(cat(OpImplicitPointer, []byte{0x44, 0, 0, 0}, leb128.AppendInt(nil, -4)), newTarget(), cfg)
	if err != nil || res.Kind != KindImplicitPointer || res.PointerDIE != 0x44 || res.PointerOffset != -4 {
		t.Errorf("implicit_pointer: %+v %v", res, err)
	}
}

func TestAddrSize4(t *testing.T) {
	res, err := Eval(cat(OpLit0, OpLit0+1, OpMinus, OpStackValue), newTarget(), &Config{AddrSize: 4})
	if err != nil || res.Value.Bits != 0xffffffff {
		t.Errorf("32-bit wraparound: %#x %v", res.Value.Bits, err)
	}
}

func TestNoAllocs(t *testing.T) {
	expr := cat(OpBreg0+7, leb128.AppendInt(nil, 8), OpBreg0+16, leb128.AppendInt(nil, 0), OpLit0+15, OpAnd, OpLit0+11, OpGe, OpLit0+3, OpShl, OpPlus)
	tgt := newTarget()
	tgt.regs[16] = 0x100b
	var m Machine
	var tg Target = tgt
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := m.Eval(expr, tg, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Eval allocates %v times per run", allocs)
	}
}

func BenchmarkEvalPLT(b *testing.B) {
	expr := cat(OpBreg0+7, leb128.AppendInt(nil, 8), OpBreg0+16, leb128.AppendInt(nil, 0), OpLit0+15, OpAnd, OpLit0+11, OpGe, OpLit0+3, OpShl, OpPlus)
	tgt := newTarget()
	tgt.regs[16] = 0x100b
	var m Machine
	for b.Loop() {
		m.Eval(expr, tgt, nil)
	}
}
