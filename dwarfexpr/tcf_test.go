package dwarfexpr

import (
	"reflect"
	"strconv"
	"testing"
)

func tcfReg(n int) string { return "R" + strconv.Itoa(n) }

// TestTCFCommandsFrame checks the CFI expressions gcc and glibc emit (the
// PLT rule, a realigned frame, signal frames) and what is not written.
func TestTCFCommandsFrame(t *testing.T) {
	for _, c := range []struct {
		expr []byte
		want []any
		ok   bool
	}{
		// PLT: rsp+8 + ((rip&15) >= 11) << 3
		{[]byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22},
			[]any{TCFRdReg, "R7", TCFNumber, int64(8), TCFAdd, TCFRdReg, "R16", TCFNumber, int64(15), TCFAnd, TCFNumber, int64(11), TCFGE, TCFNumber, int64(3), TCFShl, TCFAdd}, true},
		// realigned frame: *(rbp-8)
		{[]byte{0x76, 0x78, 0x06}, []any{TCFRdReg, "R6", TCFNumber, int64(-8), TCFAdd, TCFRdMem, 8, false}, true},
		{[]byte{0x92, 0x10, 0x00, 0x23, 0x90, 0x01}, []any{TCFRdReg, "R16", TCFNumber, uint64(144), TCFAdd}, true},
		{[]byte{0x0b, 0xff, 0xff, 0x94, 0x04}, []any{TCFNumber, int64(-1), TCFRdMem, 4, false}, true},
		{[]byte{0x0e, 1, 2, 3, 4, 5, 6, 7, 8, 0x1f, 0x9c}, []any{TCFNumber, uint64(0x0807060504030201), TCFNeg, TCFFP}, true},
		{nil, nil, true},
		{[]byte{0x12}, nil, false},                         // dup: no command
		{[]byte{0x77}, nil, false},                         // truncated
		{[]byte{0x94, 0x09}, nil, false},                   // deref_size 9
		{[]byte{0x03, 1, 2, 3, 4, 5, 6, 7, 8}, nil, false}, // addr: not a frame rule's
		{[]byte{0x92, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00}, nil, false}, // bregx of a huge register
	} {
		got, ok := TCFCommands(c.expr, TCFOptions{Reg: tcfReg})
		if ok != c.ok || ok && !reflect.DeepEqual(got, c.want) {
			t.Errorf("% x: %v %v, want %v %v", c.expr, got, ok, c.want, c.ok)
		}
	}
}

// TestTCFCommandsPlace checks variable places: one operation, offsets always
// written, registers only with an ID.
func TestTCFCommandsPlace(t *testing.T) {
	onlyRBP := func(n int) string {
		if n == 6 {
			return "R6"
		}
		return ""
	}
	for _, c := range []struct {
		expr []byte
		reg  func(int) string
		want []any
		ok   bool
	}{
		{[]byte{0x03, 0x10, 0x20, 0, 0, 0, 0, 0, 0}, nil, []any{TCFNumber, uint64(0x2010 + 0x1000)}, true},
		{[]byte{0x91, 0x6c}, nil, []any{TCFFP, TCFNumber, int64(-20), TCFAdd}, true},
		{[]byte{0x76, 0x00}, onlyRBP, []any{TCFRdReg, "R6", TCFNumber, int64(0), TCFAdd}, true},
		{[]byte{0x77, 0x08}, onlyRBP, nil, false},   // no ID for rsp
		{[]byte{0x76, 0x08}, nil, nil, false},       // no registers at all
		{[]byte{0x91, 0x6c, 0x06}, nil, nil, false}, // two operations
		{[]byte{0x03, 0x10, 0x20}, nil, nil, false}, // truncated
		{[]byte{0x50}, onlyRBP, nil, false},         // a register, not a place in memory
		{nil, nil, nil, false},
	} {
		got, ok := TCFCommands(c.expr, TCFOptions{Reg: c.reg, Place: true, AddrBias: 0x1000})
		if ok != c.ok || ok && !reflect.DeepEqual(got, c.want) {
			t.Errorf("% x: %v %v, want %v %v", c.expr, got, ok, c.want, c.ok)
		}
	}
}

// FuzzTCFCommands: any bytes are written or refused, never a panic, and
// what is written holds only known commands with their arguments.
func FuzzTCFCommands(f *testing.F) {
	f.Add([]byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}, false)
	f.Add([]byte{0x92, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00}, false)
	f.Add([]byte{0x0e, 1, 2, 3, 4, 5, 6, 7}, false)
	f.Add([]byte{0x91, 0x6c}, true)
	f.Add([]byte{0x03, 1, 2, 3, 4, 5, 6, 7, 8}, true)
	f.Fuzz(func(t *testing.T, expr []byte, place bool) {
		cmds, ok := TCFCommands(expr, TCFOptions{Reg: tcfReg, Place: place})
		if !ok {
			if cmds != nil {
				t.Fatalf("refused with commands %v", cmds)
			}
			return
		}
		for i := 0; i < len(cmds); i++ {
			op, isInt := cmds[i].(int)
			if !isInt || op < TCFNumber || op > TCFShr {
				t.Fatalf("command %d of %v: %v", i, cmds, cmds[i])
			}
			switch op {
			case TCFNumber, TCFRdReg:
				i++
			case TCFRdMem:
				i += 2
			}
			if i >= len(cmds) {
				t.Fatalf("%v: arguments missing", cmds)
			}
		}
	})
}

// BenchmarkTCFCommands writes glibc's PLT CFA expression as commands.
func BenchmarkTCFCommands(b *testing.B) {
	expr := []byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}
	o := TCFOptions{Reg: tcfReg}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := TCFCommands(expr, o); !ok {
			b.Fatal("not written")
		}
	}
}
