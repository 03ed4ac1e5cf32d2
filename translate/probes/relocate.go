package probes

import (
	"fmt"

	"github.com/sondedbg/sonde/disasm"
)

// relocated is one application instruction made to run in a trampoline.
type relocated struct {
	code   []byte
	appPC  uint64
	spAdj  []spRange // where the copy's stack pointer differs from the application's
	leaves bool      // never falls through (jmp, ret): no jump back needed after it
}

// spRange says that in code bytes [off, end) the application's stack pointer is
// the trampoline's plus adj.
type spRange struct {
	off, end int
	adj      int64
}

// relocateInsn makes in run at dest, for a trampoline.
func relocateInsn(in disasm.Instruction, dest uint64) (relocated, error) {
	if _, _, pcrel := in.PCRelative(); pcrel {
		return relocated{}, fmt.Errorf("the PC-relative instruction at %#x needs a relocator", in.Address)
	}
	r := relocated{code: append([]byte(nil), in.Bytes...), appPC: in.Address}
	r.leaves = endsFlow(&in)
	return r, nil
}
