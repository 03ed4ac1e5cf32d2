package main

import (
	"strings"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/unwind"
)

// untilMainOf is untilMain where gdb stops at main: at the language's main
// where the compiler names one with DW_AT_main_subprogram. gdb 13 takes that
// name for main's and looks for an ELF symbol of that name: Rust's crate::main
// has one (gdb stops there, above the runtime's lang_start frames), the
// Fortran program unit ("p") has none (gdb shows the whole stack down to
// _start, the C main that calls MAIN__ included).
func untilMainOf(sess *session.Session, frames []unwind.StackFrame) []unwind.StackFrame {
	out := untilMain(frames)
	if len(out) == len(frames) {
		return frames
	}
	f := out[len(out)-1]
	m, ok := f.Module.Client.(*session.Module)
	if !ok {
		return out
	}
	if u, ok := sess.CompileUnit(m, f.LookupPC); ok && fortranProducer(u.Producer) {
		return frames
	}
	if i := rustMainFrame(m, out); i >= 0 {
		return out[:i+1]
	}
	if i := dMainFrame(m, out); i >= 0 {
		return out[:i+1]
	}
	return out
}

// dMainFrame returns the index of the frame of D's main, _Dmain (DWARF's
// "D main"), in the executable, or -1. gdb takes it for main when the
// program has that symbol (d_main_name) and stops there, above druntime's
// _d_run_main frames and the C main that calls them.
func dMainFrame(exe *session.Module, frames []unwind.StackFrame) int {
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
		if !f.HasSymbol || f.Module == nil || f.Module.Client != exe {
			continue
		}
		if n := f.Symbol.Function; n == "_Dmain" || n == "D main" || f.Symbol.LinkageName == "_Dmain" {
			return i
		}
	}
	return -1
}

// fortranProducer reports whether a compile unit's DW_AT_producer is a
// Fortran compiler (gfortran, flang), which writes the C main into the
// program unit's compile unit.
func fortranProducer(p string) bool {
	return strings.HasPrefix(p, "GNU Fortran") || strings.Contains(p, "flang")
}

// rustMainFrame returns the index of the frame of the executable's Rust main
// function, or -1: the outermost frame named CRATE::main in the executable
// below (inner to) the runtime's __rust_begin_short_backtrace, which calls
// it. That is the function rustc marks DW_AT_main_subprogram; finding it by
// that attribute would read the names of all of std's DWARF (a quarter of a
// second of CPU for a small program).
func rustMainFrame(exe *session.Module, frames []unwind.StackFrame) int {
	main := -1
	for i, f := range frames {
		if !f.HasSymbol {
			continue
		}
		name := f.Symbol.Function
		if strings.Contains(name, "__rust_begin_short_backtrace") {
			return main
		}
		if strings.HasSuffix(name, "::main") && f.Module != nil && f.Module.Client == exe {
			main = i
		}
	}
	return -1
}
