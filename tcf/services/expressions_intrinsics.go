package services

import (
	"encoding/binary"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/variables"
)

// The debugger's own $names in expressions, as the C TCF agent offers them
// on Linux x86-64 (its expressions.c, dprintf.c, context-linux.c and the
// register list of cpudefs-mdep.c):
//
//   - $printf(...) (expressions_printf.go).
//   - $thread: the ID of the thread the expression is evaluated in, a string.
//   - $<register>: a register of the expression's frame. The expr package
//     reads those with DWARF numbers (and gdb's aliases $pc, $sp, $eax...) in
//     any frame; this file the others the Registers service lists
//     ($orig_rax, $fop, $ymm0h...), which only the top frame knows, the C
//     agent's names for registers sonde calls otherwise ($cwd is $fctrl,
//     $swd $fstat, $ftw $ftag, $rdp $fooff), and the flags of eflags the C
//     agent lists as registers ($cf, $zf, $iopl...).
//   - $loader_brk and $loader_state: the dynamic linker's r_debug.r_brk (the
//     function it calls on every change of the loaded objects) and r_state.
//
// Where both a program variable and a $name could be meant there is no
// clash: a variable is written without the $ (or as $"name").

// intrinsics returns the $names of expressions evaluated in ee, with
// $printf's text going to out.
func (a *Agent) intrinsics(ee *exprEnv, out printfOutput) func(string) *expr.Intrinsic {
	return func(name string) *expr.Intrinsic {
		switch name {
		case "printf":
			if !a.dprintfEnabled() {
				return nil
			}
			return &expr.Intrinsic{Call: func(args []*expr.Result, effects bool) (*expr.Result, error) {
				if !effects {
					return callPrintf(args, ee.thread, nil)
				}
				return callPrintf(args, ee.thread, out)
			}}
		case "thread":
			return value(func() (*expr.Result, error) { return expr.StringResult(string(ee.thread.ID())), nil })
		case "loader_brk", "loader_state":
			return value(func() (*expr.Result, error) { return a.loaderState(ee, name) })
		}
		ar := a.target.Arch()
		if alias, ok := cAgentRegisters[name]; ok {
			if reg := ar.ByName(alias); reg != nil {
				return value(func() (*expr.Result, error) { return frameRegister(ee, reg) })
			}
		}
		if reg := ar.ByName(name); reg != nil && reg.DWARF < 0 {
			return value(func() (*expr.Result, error) { return frameRegister(ee, reg) })
		}
		if f, ok := eflagsBits[name]; ok {
			if reg := ar.ByName("eflags"); reg != nil {
				return value(func() (*expr.Result, error) { return readEflagsField(ee, reg, f) })
			}
		}
		return nil
	}
}

func value(f func() (*expr.Result, error)) *expr.Intrinsic { return &expr.Intrinsic{Value: f} }

// withIntrinsics returns a copy of ee's environment (which is cached and
// shared) that knows the $names, $printf writing to out.
func (a *Agent) withIntrinsics(ee *exprEnv, out printfOutput) *expr.Env {
	env := *ee.env
	env.Intrinsic = a.intrinsics(ee, out)
	return &env
}

// cAgentRegisters are the C agent's names of x86-64 registers that sonde's
// Registers service names as gdb does.
var cAgentRegisters = map[string]string{"cwd": "fctrl", "swd": "fstat", "ftw": "ftag", "rdp": "fooff"}

// eflagsField is a bit field of eflags.
type eflagsField struct{ pos, len uint }

// eflagsBits are the flags the C agent lists as registers under eflags.
var eflagsBits = map[string]eflagsField{
	"cf": {0, 1}, "pf": {2, 1}, "af": {4, 1}, "zf": {6, 1}, "sf": {7, 1}, "tf": {8, 1}, "if": {9, 1},
	"df": {10, 1}, "of": {11, 1}, "iopl": {12, 2}, "nt": {14, 1}, "rf": {16, 1}, "vm": {17, 1},
	"ac": {18, 1}, "vif": {19, 1}, "vip": {20, 1}, "id": {21, 1},
}

// frameRegister reads a register in ee's frame: through the unwound frame
// when it has a DWARF number, else from the thread, which only the top
// frame may do (no unwinder recovers such a register).
func frameRegister(ee *exprEnv, reg *arch.Register) (*expr.Result, error) {
	var b []byte
	var err error
	if reg.DWARF >= 0 {
		b, err = ee.frame.Register(reg.DWARF)
	} else {
		if ee.frameID != frameID(0, ee.thread) {
			return nil, &expr.Error{Kind: expr.ErrOptimizedOut, Msg: "$" + reg.Name + " is only known in the top frame"}
		}
		regs, rerr := ee.thread.Registers()
		if rerr != nil {
			return nil, rerr
		}
		b, err = regs.Get(reg)
	}
	if err != nil {
		return nil, &expr.Error{Kind: expr.ErrOptimizedOut, Msg: "$" + reg.Name + " is not available in this frame", Err: err}
	}
	var t *variables.Type
	switch len(b) {
	case 8:
		t = expr.KeywordType("long")
	case 4:
		t = expr.KeywordType("int")
	case 2:
		t = expr.KeywordType("short")
	case 1:
		t = expr.KeywordType("char")
	default:
		t = expr.ArrayOf(expr.KeywordType("unsigned", "char"), int64(len(b)))
	}
	return &expr.Result{Type: t, Value: append([]byte(nil), b...)}, nil
}

// readEflagsField reads one flag (or the two-bit I/O privilege level) of
// eflags, as an unsigned int.
func readEflagsField(ee *exprEnv, reg *arch.Register, f eflagsField) (*expr.Result, error) {
	r, err := frameRegister(ee, reg)
	if err != nil {
		return nil, err
	}
	var w [8]byte
	copy(w[:], r.Value)
	v := binary.LittleEndian.Uint64(w[:]) >> f.pos & (1<<f.len - 1)
	out := make([]byte, 4)
	binary.LittleEndian.PutUint32(out, uint32(v))
	return &expr.Result{Type: expr.KeywordType("unsigned", "int"), Value: out}, nil
}

// loaderState reads the dynamic linker's r_debug (through the executable's
// DT_DEBUG): r_brk as a void * ($loader_brk), r_state as an int
// ($loader_state: 0 consistent, 1 adding, 2 deleting objects).
func (a *Agent) loaderState(ee *exprEnv, name string) (*expr.Result, error) {
	if _, err := a.session.Modules(ee.thread); err != nil {
		return nil, err
	}
	rd, err := a.session.Loader(ee.thread)
	if err != nil {
		return nil, tcf.Errorf(tcf.CodeOther, "cannot access loader data: %v", err)
	}
	if rd == nil {
		return nil, tcf.Errorf(tcf.CodeOther, "cannot access loader data: no r_debug (a static executable, or the dynamic linker has not started)")
	}
	if name == "loader_brk" {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, rd.Brk)
		return &expr.Result{Type: expr.PointerTo(expr.KeywordType("void")), Value: b}, nil
	}
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, uint32(rd.State))
	return &expr.Result{Type: expr.KeywordType("int"), Value: b}, nil
}
