package services

import (
	"strconv"
	"testing"
)

func regName(n int) string { return "R" + strconv.Itoa(n) }

// FuzzTranslateDWARF: any bytes translate or fall back (dwarfexpr.TCFCommands
// has the translation's own tests), never panic, and begin with the frame
// address.
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
