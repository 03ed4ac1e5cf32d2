package dap

import (
	"strings"

	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/variables"
)

// functionType gives expr the type of the function at a run-time address
// from its module's DWARF, so a function named in a watch prints as gdb
// prints it: {int (int, int)} 0x401126 <add>, not {int (void)}.
func (d *debuggee) functionType(th *target.Context) func(uint64) *variables.Type {
	return func(addr uint64) *variables.Type {
		mods, err := d.sess.Modules(th)
		if err != nil {
			return nil
		}
		m := mods.ForAddress(addr)
		if m == nil {
			return nil
		}
		b, _ := d.sess.Binary(m)
		if b == nil || !b.HasDWARF() {
			return nil
		}
		r, err := variables.For(b)
		if err != nil {
			return nil
		}
		t, _ := r.FunctionType(addr - m.Bias)
		return t
	}
}

// cxxSymbolName is the name gdb gives a C++ function in <...> (its ELF
// symbol demangled, parameters and qualifiers included: <add(int, int)>,
// <Counter::peek() const>) where the DWARF name fn is that name without
// them; fn unchanged otherwise (C, Rust, no symbol).
func cxxSymbolName(d *debuggee, fn string, addr uint64) string {
	if fn == "" || strings.ContainsRune(fn, '(') {
		return fn
	}
	sym, _, ok := d.sess.SymbolAt(d.proc, addr)
	if !ok || !strings.HasPrefix(sym, "_Z") {
		return fn
	}
	if dm, ok := symbols.DemangleLinkageName(sym); ok && strings.HasPrefix(dm, fn+"(") {
		return dm
	}
	return fn
}
