package main

import (
	"strings"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/unwind"
)

// untilMainOf is untilMain where gdb stops at main: not in a program whose
// main function is a Fortran or Rust one. There the compiler marks the
// language's main (gfortran's program unit "p", Rust's crate::main) with
// DW_AT_main_subprogram, gdb 13 takes that name for main's, finds no ELF
// symbol of that name, and so shows the whole stack down to _start (the C
// main that calls the language's runtime included).
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
	if u, ok := sess.CompileUnit(m, f.LookupPC); ok && languageMainProducer(u.Producer) {
		return frames
	}
	return out
}

// languageMainProducer reports whether a compile unit's DW_AT_producer is a
// compiler that names its language's main with DW_AT_main_subprogram and
// writes the C main into the same unit (gfortran, flang, rustc).
func languageMainProducer(p string) bool {
	return strings.HasPrefix(p, "GNU Fortran") || strings.Contains(p, "flang") || strings.Contains(p, "rustc version")
}
