package main

// How `sonde stack` follows gdb's backtrace conventions: where a stack ends,
// which frames print their pc, how functions and files are named, and the
// text layout of `thread apply all bt`.

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/unwind"
)

// untilMain drops the frames that call the executable's main function
// (the C library's start-up code), as gdb's backtrace does unless told
// "set backtrace past-main on".
func untilMain(frames []unwind.StackFrame) []unwind.StackFrame {
	for i, f := range frames {
		if f.Kind != unwind.KindNormal || !f.HasSymbol || f.Symbol.Function != "main" || f.Module == nil {
			continue
		}
		if m, ok := f.Module.Client.(*session.Module); ok && m.Main {
			return frames[:i+1]
		}
	}
	return frames
}

// markAddresses applies gdb's rule for which frames print their pc: a frame
// that has inlined calls below it in the same physical frame does not (its
// location is a call site); the innermost frame of a physical frame does,
// unless its pc is exact (frame 0, or interrupted by a signal) and is the
// first address of a line-table row that is a statement (with lines shown:
// without them there is no row, as for gdb without debug information). gdb's
// frame_show_address: pc != sal.pc || !sal.is_stmt.
func markAddresses(sess *session.Session, trace unwind.Trace, frames []stackFrame, noLines bool) {
	for i := range frames {
		if i >= len(trace.Frames) {
			return
		}
		f := trace.Frames[i]
		if i > 0 && trace.Frames[i-1].Physical == f.Physical && trace.Frames[i-1].Kind != unwind.KindTailCall && f.Kind != unwind.KindTailCall {
			continue // has inlined callees
		}
		frames[i].showAddress = true
		if noLines || f.PC != f.LookupPC || f.Module == nil {
			continue
		}
		m, ok := f.Module.Client.(*session.Module)
		if !ok {
			continue
		}
		if b, _ := sess.Binary(m); b != nil && atStatement(b, f.PC-m.Bias) {
			frames[i].showAddress = false
		}
	}
}

// atStatement reports whether addr (a link-time address of b) starts a
// line-table row marked is_stmt, as gdb records rows: a row at addr that is
// not a statement (GCC emits them at -O1 and above, inside a line) makes gdb
// print the frame's address.
func atStatement(b *symbols.Binary, addr uint64) bool {
	li, ok, _ := b.LineAt(addr)
	return ok && li.Start == addr && li.IsStmt
}

// printStack prints the report the way gdb's `thread apply all bt` does.
func printStack(w io.Writer, r stackReport) {
	// gdb numbers threads in the order it found them and prints the last
	// first; r.Threads are in that order (gdbThreadOrder).
	for i, th := range r.Threads {
		if i > 0 {
			fmt.Fprintln(w)
		}
		id := fmt.Sprintf("LWP %d", th.TID)
		if th.pthread != 0 {
			id = fmt.Sprintf("Thread %#x (LWP %d)", th.pthread, th.TID)
		}
		if th.Name != "" && th.live {
			fmt.Fprintf(w, "Thread %d (%s \"%s\"):\n", th.num, id, th.Name)
		} else {
			fmt.Fprintf(w, "Thread %d (%s):\n", th.num, id)
		}
		for _, f := range th.Frames {
			fmt.Fprintln(w, frameLine(f))
			printLocals(w, f)
		}
		if th.Error != "" && th.StopReason != "outermost" {
			fmt.Fprintf(w, "Backtrace stopped: %s: %s\n", th.StopReason, th.Error)
		}
	}
}

func frameLine(f stackFrame) string {
	if f.Kind == "signal" {
		return fmt.Sprintf("#%-2d <signal handler called>", f.Index)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#%-2d ", f.Index)
	pc, _ := strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 64)
	if f.showAddress {
		fmt.Fprintf(&b, "0x%016x in ", pc)
	}
	name := "??"
	if f.Function != nil {
		name = *f.Function
	}
	// The argument list follows even a name with a parameter list of its
	// own, as gdb prints it: "std::thread::join() () from LIB", "operator() (x=1)".
	b.WriteString(name + " (" + argsText(f) + ")")
	switch {
	case f.File != nil && f.Line != nil:
		fmt.Fprintf(&b, " at %s:%d", *f.File, *f.Line)
	case f.File != nil:
		fmt.Fprintf(&b, " at %s", *f.File)
	case f.inLibrary:
		fmt.Fprintf(&b, " from %s", f.Module)
	}
	return b.String()
}

// gdbFiles rewrites the frames' source paths into the form gdb prints
// (stack_sourcefile.go), from each frame's compilation unit.
func gdbFiles(sess *session.Session, trace unwind.Trace, frames []stackFrame) {
	for i := range frames {
		if frames[i].File == nil || i >= len(trace.Frames) {
			continue
		}
		f := trace.Frames[i]
		file := gdbFile(*frames[i].File)
		if f.Module != nil {
			if m, ok := f.Module.Client.(*session.Module); ok {
				if u, ok := sess.CompileUnit(m, f.LookupPC); ok {
					file = gdbSourceFile(*frames[i].File, &u)
				}
			}
		}
		frames[i].File = &file
	}
}

// gdbFileAt is the one spelling of a source file sonde uses where gdb's is
// expected (stack, symbolize --pid): file as symbols names it for the
// link-time address addr of b (nil when unknown), rewritten as gdb prints it
// from addr's compilation unit.
func gdbFileAt(b *symbols.Binary, addr uint64, file string) string {
	if b != nil {
		if u, ok := b.CompileUnit(addr); ok {
			return gdbSourceFile(file, &u)
		}
	}
	return gdbFile(file)
}

// gdbFile turns a source path as symbols gives it (the compilation directory,
// the line table's directory and the file name joined, as addr2line prints
// it) into the form gdb's bt prints for the commonest case it differs: a
// relative compilation directory such as glibc's "./time" in front of a
// relative directory entry ("./time/../sysdeps/x.c" is "../sysdeps/x.c" in
// gdb). Other paths are printed as they are.
func gdbFile(path string) string {
	rest, ok := strings.CutPrefix(path, "./")
	if !ok {
		return path
	}
	dir, after, ok := strings.Cut(rest, "/")
	if !ok || dir == "" || dir == "." || dir == ".." || !strings.HasPrefix(after, "../") {
		return path
	}
	return after
}

// qualifierChars are the characters of C++'s trailing " const", " volatile"
// and reference qualifiers, trimmed together from a demangled signature.
const qualifierChars = " &acevilnost"

// gdbName is the name gdb's bt prints for a function: for C++ (a mangled
// linkage name), the demangled name without its parameter list and
// qualifiers — "ns::C::~C" for "ns::C::~C()", "f<int>" for "f<int>(int) const".
func gdbName(name, linkage string) string {
	if !strings.HasPrefix(linkage, "_Z") || !strings.HasSuffix(strings.TrimRight(name, qualifierChars), ")") {
		return name
	}
	end := len(strings.TrimRight(name, qualifierChars))
	depth := 0
	for i := end - 1; i >= 0; i-- {
		switch name[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				if i == 0 {
					return name
				}
				return name[:i]
			}
		}
	}
	return name
}

// gdbSymbolName is how gdb prints a name that comes from the ELF symbol table
// (no DWARF covers the address). gdb tries every language's demangler on
// such names, and Ada's accepts plain lower-case names: its decoding drops a
// trailing ".N", which GCC appends to clones and partial functions, so
// "work.constprop.0" prints as "work.constprop" — but "__work.constprop.0"
// (a leading underscore) and names with capitals stay as they are. Only that
// part of Ada decoding is reproduced here.
func gdbSymbolName(name, linkage string) string {
	if strings.HasPrefix(linkage, "_Z") || name == "" || name[0] == '_' {
		return name
	}
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return name
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return name
		}
	}
	for _, c := range name {
		if c >= 'A' && c <= 'Z' {
			return name
		}
	}
	return name[:i]
}
