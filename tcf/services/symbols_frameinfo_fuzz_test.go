package services

import (
	"reflect"
	"strconv"
	"testing"
)

func regName(n int) string { return "R" + strconv.Itoa(n) }

// TestTranslateDWARF checks the CFI expressions gcc and glibc emit (the PLT
// rule, a realigned frame, signal frames) and the fallback.
func TestTranslateDWARF(t *testing.T) {
	for _, c := range []struct {
		expr []byte
		want []any
		ok   bool
	}{
		// PLT: rsp+8 + ((rip&15) >= 11) << 3
		{[]byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22},
			[]any{locRdReg, "R7", locNumber, int64(8), locAdd, locRdReg, "R16", locNumber, int64(15), 9, locNumber, int64(11), 13, locNumber, int64(3), 17, locAdd}, true},
		// realigned frame: *(rbp-8)
		{[]byte{0x76, 0x78, 0x06}, []any{locRdReg, "R6", locNumber, int64(-8), locAdd, locRdMem, 8, false}, true},
		{[]byte{0x92, 0x10, 0x00, 0x23, 0x90, 0x01}, []any{locRdReg, "R16", locNumber, uint64(144), locAdd}, true},
		{[]byte{0x0b, 0xff, 0xff, 0x94, 0x04}, []any{locNumber, int64(-1), locRdMem, 4, false}, true},
		{[]byte{0x12}, nil, false},       // dup: no command
		{[]byte{0x77}, nil, false},       // truncated
		{[]byte{0x94, 0x09}, nil, false}, // deref_size 9
	} {
		got, ok := translateDWARF(c.expr, regName)
		if ok != c.ok || ok && !reflect.DeepEqual(got, c.want) {
			t.Errorf("% x: %v %v, want %v %v", c.expr, got, ok, c.want, c.ok)
		}
	}
}

// FuzzTranslateDWARF: any bytes translate or fall back, never panic, and a
// translation only holds known commands.
func FuzzTranslateDWARF(f *testing.F) {
	f.Add([]byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22})
	f.Add([]byte{0x92, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00})
	f.Add([]byte{0x0e, 1, 2, 3, 4, 5, 6, 7})
	f.Fuzz(func(t *testing.T, expr []byte) {
		cmds := exprCommands(expr, regName, true)
		if len(cmds) < 1 || cmds[0] != locFP {
			t.Fatalf("%v", cmds)
		}
	})
}
