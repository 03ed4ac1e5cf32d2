package probes

import (
	"github.com/sondedbg/sonde/disasm"
	"github.com/sondedbg/sonde/translate"
)

// relocated is one application instruction made to run in a trampoline
// (translate.Relocate in Inline mode: calls push the application's return
// address, so the stack only ever holds application addresses).
type relocated struct {
	code    []byte
	entries []Entry // relative to the code's start (Lo, Hi are offsets)
	leaves  bool    // never falls through (jmp, ret, call): no jump back after it
}

// relocateInsn makes in run at dest, for a trampoline.
func relocateInsn(in disasm.Instruction, dest uint64) (relocated, error) {
	r, err := translate.Relocate(in.Bytes, in.Address, dest, translate.Inline)
	if err != nil {
		return relocated{}, err
	}
	out := relocated{code: r.Code}
	for _, rg := range r.Table {
		out.entries = append(out.entries, Entry{Lo: uint64(rg.Off), Hi: uint64(rg.End), AppPC: rg.AppPC,
			AppRegs: true, SPAdjust: rg.SPAdjust, FlagsAt: -1})
	}
	switch r.Kind {
	case translate.KindJump, translate.KindCall, translate.KindIndirectCall, translate.KindIndirect:
		out.leaves = true
	}
	return out, nil
}
