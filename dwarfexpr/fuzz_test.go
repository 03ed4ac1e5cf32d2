package dwarfexpr

import "testing"

// FuzzEval runs arbitrary expressions with every callback wired: evaluation
// must end (step and stack limits) with a result or an *Error, never a panic.
func FuzzEval(f *testing.F) {
	f.Add([]byte{OpBreg0 + 7, 8, OpBreg0 + 16, 0, OpLit0 + 15, OpAnd, OpLit0 + 11, OpGe, OpLit0 + 3, OpShl, OpPlus})
	f.Add([]byte{OpBreg0 + 6, 0x78, OpDeref})
	f.Add([]byte{OpSkip, 0xfd, 0xff})
	f.Add([]byte{OpReg0, OpPiece, 4, OpLit0 + 1, OpStackValue, OpPiece, 4})
	f.Add([]byte{OpEntryValue, 1, OpReg0 + 5, OpStackValue})
	f.Add([]byte{OpConstType, 0x10, 4, 1, 0, 0, 0, OpConvert, 0x20, OpStackValue})
	f.Add([]byte{OpCall2, 0x30, 0})
	f.Add([]byte{OpImplicitValue, 2, 1, 2})
	f.Add([]byte{OpGNUEncodedAddr, 0x03, 1, 2, 3, 4})
	cfg := &Config{
		MaxSteps:      5000,
		FrameBase:     func() (uint64, error) { return 0x1040, nil },
		CFA:           func() (uint64, error) { return 0x1080, nil },
		TLSAddress:    func(o uint64) (uint64, error) { return o, nil },
		DebugAddr:     func(i uint64) (uint64, error) { return i, nil },
		EntryValue:    func(e []byte) (Value, error) { return Value{Bits: uint64(len(e))}, nil },
		Call:          func(uint64, bool) ([]byte, error) { return []byte{OpLit0 + 1, OpCall2, 0, 0}, nil },
		ParameterRef:  func(o uint64) (uint64, error) { return o, nil },
		VariableValue: func(o uint64) (uint64, error) { return o, nil },
		ObjectAddress: func() (uint64, error) { return 0x1000, nil },
		BaseType: func(o uint64) (BaseType, error) {
			switch o % 3 {
			case 0:
				return BaseType{Size: 4, Encoding: EncodingSigned}, nil
			case 1:
				return BaseType{Size: 8, Encoding: EncodingFloat}, nil
			}
			return BaseType{Size: 4, Encoding: EncodingFloat}, nil
		},
	}
	var m Machine
	f.Fuzz(func(t *testing.T, expr []byte) {
		m.Eval(expr, newTarget(), cfg, 0x1080)
		m.Eval(expr, newTarget(), &Config{AddrSize: 4})
	})
}
