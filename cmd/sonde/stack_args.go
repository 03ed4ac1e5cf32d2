package main

// Arguments and locals of `sonde stack` frames, printed as gdb's bt and
// bt full print them; session's Stack.FrameVariables reads and formats them
// from the registers of the walk that made the backtrace.

import (
	"fmt"
	"io"
	"strings"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

// stackVar is one argument or local in the JSON (field names are a
// contract). EntryValue is the parameter's value on entry to its function
// (gdb's name@entry) when the caller's call-site information says it.
type stackVar struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Value      string  `json:"value"`
	EntryValue *string `json:"entry_value,omitempty"`
	entryEqual bool
}

// addFrameVars fills the frames' arguments (and locals with full) from the
// thread's stop; frames without DWARF keep none. pretty shows library
// types as gdb's pretty-printers do (gdb loads libstdc++'s by default).
func addFrameVars(sess *session.Session, th *target.Context, trace unwind.Trace, frames []stackFrame, full, pretty bool) {
	var vars []session.FrameVars
	if st, err := sess.StackOf(th, trace); err == nil {
		vars = st.FrameVariables(len(trace.Frames), session.FrameVarsOptions{Locals: full, Pretty: pretty, UTF8: session.HostUTF8()})
	}
	for i := range frames {
		frames[i].Args = []stackVar{}
		if full {
			locals := []stackVar{}
			frames[i].Locals = &locals
		}
		if i >= len(vars) {
			continue
		}
		frames[i].debug = vars[i].Debug
		for _, a := range vars[i].Args {
			frames[i].Args = append(frames[i].Args, stackVar{Name: a.Name, Type: a.Type, Value: a.Value, EntryValue: a.Entry, entryEqual: a.EntryEqual})
		}
		if full {
			for _, l := range vars[i].Locals {
				*frames[i].Locals = append(*frames[i].Locals, stackVar{Name: l.Name, Type: l.Type, Value: l.Value})
			}
		}
	}
}

// argsText is a frame's argument list as gdb's bt prints it, with entry
// values as "print entry-values default" shows them: x=x@entry=3 when equal,
// x=4, x@entry=3 when not.
func argsText(f stackFrame) string {
	var parts []string
	for _, a := range f.Args {
		switch {
		case a.EntryValue != nil && a.entryEqual:
			parts = append(parts, a.Name+"="+a.Name+"@entry="+a.Value)
		case a.EntryValue != nil:
			parts = append(parts, a.Name+"="+a.Value, a.Name+"@entry="+*a.EntryValue)
		default:
			parts = append(parts, a.Name+"="+a.Value)
		}
	}
	return strings.Join(parts, ", ")
}

// printLocals prints a frame's locals as gdb's bt full does.
func printLocals(w io.Writer, f stackFrame) {
	if f.Locals == nil || f.Kind == "signal" {
		return
	}
	if !f.debug {
		fmt.Fprintln(w, "No symbol table info available.")
		return
	}
	if len(*f.Locals) == 0 {
		fmt.Fprintln(w, "No locals.")
		return
	}
	for _, l := range *f.Locals {
		fmt.Fprintf(w, "        %s = %s\n", l.Name, l.Value)
	}
}
