package session

// Values of a stopped thread for front ends: the variables of every frame of
// a backtrace as gdb prints them, global variables by name, and the
// functions an ELF symbol names (for entry values' call sites).

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/variables"
)

// FindGlobal returns the definition of the global variable name in the first
// of mods whose debug information defines it, with that module's reader and
// load bias. A declaration without a location (an extern) does not count:
// the variable lives in the module that defines it. Modules without DWARF
// (and the vDSO) are passed over, and so are libraries whose ELF symbols
// show they cannot define it (globalnames.go): a miss must not index a
// large library's DWARF.
func (s *Session) FindGlobal(mods []*modules.Module, name string) (*variables.Variable, *variables.Reader, uint64, error) {
	for _, m := range mods {
		if m.VDSO {
			continue
		}
		b, _ := s.Binary(m)
		if b == nil || !b.HasDWARF() {
			continue
		}
		if !m.Main && filterGlobalsBySymbols && !mayDefineGlobal(b, name) {
			continue
		}
		r, err := variables.For(b)
		if err != nil {
			continue
		}
		if vs, err := r.Globals(name); err == nil && vs[0].Loc.Kind != variables.LocNone {
			return vs[0], r, m.Bias, nil
		}
	}
	return nil, nil, 0, fmt.Errorf("no global %q", name)
}

// SymbolAddresses returns the run-time addresses of the functions an ELF
// symbol names in the process (variables.SymbolFrame): those of the first
// module, in the modules' order, with a global (else weak, else local)
// function symbol of that name, as gdb's minimal-symbol lookup finds them.
// A versioned symbol may name several (pthread_cond_wait@@GLIBC_2.3.2 and
// its compatibility version): all are returned. A call site that only
// declares the function it calls is resolved through it.
func (f *Frame) SymbolAddresses(name string) []uint64 {
	var best []uint64
	bestRank := 3
	for _, m := range f.stack.mods {
		if m.VDSO {
			continue // no call site names its functions; its symbol file would be looked for
		}
		b, _ := f.stack.sess.Binary(m)
		if b == nil {
			continue
		}
		// Not the whole symbol table (a third of a stack's CPU), nor its
		// demangled names (seconds in libjvm.so): the name is a linkage name.
		syms, err := b.LinkageFunctionSymbols(name)
		if err != nil {
			continue
		}
		for _, s := range syms {
			rank := 2
			switch s.Bind {
			case elf.STB_GLOBAL:
				rank = 0
			case elf.STB_WEAK:
				rank = 1
			}
			if rank < bestRank {
				best, bestRank = best[:0], rank
			}
			if rank == bestRank {
				best = append(best, s.Addr+m.Bias)
			}
		}
		if bestRank == 0 {
			break
		}
	}
	return best
}

// FrameVar is a parameter or local variable of a backtrace frame, printed
// the way gdb's backtrace prints it.
type FrameVar struct {
	Name  string
	Type  string // the C spelling of its type
	Value string // gdb's text: "3", "0x4006f4 \"hi\"", "...", "<optimized out>"
	// Entry is the parameter's value on entry to the function (gdb's
	// name@entry), recovered from the caller's call-site information; nil
	// when DWARF does not say it.
	Entry *string
	// EntryEqual is set when Entry is known and equal to the current value:
	// gdb prints name=name@entry=VALUE then.
	EntryEqual bool
}

// FrameVars are the parameters and, when asked for, the locals of one
// frame of a backtrace.
type FrameVars struct {
	Args   []FrameVar
	Locals []FrameVar
	// Debug is false when no DWARF function covers the frame's pc (gdb's
	// bt full says "No symbol table info available." then).
	Debug bool
}

// FrameVarsOptions select what FrameVariables reads.
type FrameVarsOptions struct {
	Locals bool // also the locals of every frame (gdb's bt full)
	// Elements bounds strings and arrays (gdb's print elements; 0: 200).
	Elements int
	// Pretty prints library containers as gdb's pretty-printers do
	// (variables.FormatOptions.Pretty); off, they print as their members,
	// as gdb does without its auto-loaded printers.
	Pretty bool
	// UTF8 prints strings in a UTF-8 host charset, as gdb does in a UTF-8
	// locale (variables.FormatOptions.UTF8; HostUTF8 says which).
	UTF8 bool
}

// HostUTF8 reports whether the environment's locale is a UTF-8 one, in
// which gdb prints strings' multibyte characters as themselves.
func HostUTF8() bool { return variables.HostUTF8(os.Getenv) }

// FrameVariables reads the parameters (and locals) of the first n frames of
// the stack's backtrace (n < 0: all), formatted as gdb's bt (and bt full)
// print them: arguments in summary mode (aggregates as "..."), entry values
// as gdb's "print entry-values default" shows them, locals in full,
// innermost block first. Frames without DWARF get no variables. The frames
// a backtrace does not show (gdb's stops at main) are no callers for entry
// values, as in gdb.
func (st *Stack) FrameVariables(n int, o FrameVarsOptions) []FrameVars {
	frames := st.trace.Frames
	if n >= 0 && n < len(frames) {
		frames = frames[:n]
	}
	out := make([]FrameVars, len(frames))
	if len(frames) == 0 {
		return out
	}
	view := st.view(frames[len(frames)-1].Physical + 1)
	fo := variables.FormatOptions{Elements: o.Elements, Symbol: st.sess.symbolizer(st.mods), Pretty: o.Pretty, UTF8: o.UTF8}
	trace := unwind.Trace{Frames: frames}
	// Outermost first: a frame's entry values are its caller's call-site
	// values, often entry values of the caller in turn (a recursion), which
	// the cache then already holds.
	for i := len(trace.Frames) - 1; i >= 0; i-- {
		tf := trace.Frames[i]
		if tf.Kind == unwind.KindTailCall {
			if pf := view.TailFrame(i); pf != nil {
				out[i] = frameVars(pf, 0, o.Locals, fo)
			}
			continue
		}
		if tf.Kind != unwind.KindNormal && tf.Kind != unwind.KindInline {
			continue // signal trampolines have no variables
		}
		pf := view.Frame(tf.Physical)
		if pf == nil {
			continue
		}
		depth := 0
		for j := i - 1; j >= 0 && trace.Frames[j].Physical == tf.Physical; j-- {
			if k := trace.Frames[j].Kind; k == unwind.KindNormal || k == unwind.KindInline {
				depth++
			}
		}
		out[i] = frameVars(pf, depth, o.Locals, fo)
	}
	return out
}

// frameVars reads the variables of inline depth depth of physical frame pf.
func frameVars(pf *Frame, depth int, locals bool, fo variables.FormatOptions) FrameVars {
	var fv FrameVars
	r, err := pf.Reader()
	if r == nil || err != nil {
		return fv
	}
	scopesAt := r.ParamScopesAt // arguments only: no locals decoded
	if locals {
		scopesAt = r.ScopesAt
	}
	chain, err := scopesAt(variables.LookupPC(pf))
	if err != nil || len(chain) == 0 {
		return fv
	}
	scopes := variables.FrameScopes(chain, depth)
	if len(scopes) == 0 {
		return fv
	}
	fv.Debug = true
	fn := scopes[len(scopes)-1]
	args := fo
	args.Summary = true
	for _, v := range fn.Vars {
		// gdb lists no unnamed parameter (a C++ tag argument, a C
		// handler's unused int).
		if v.Param && v.Name != "" {
			fv.Args = append(fv.Args, readArg(r, v, pf, args))
		}
	}
	if !locals {
		return fv
	}
	for _, sc := range scopes {
		for _, v := range blockOrder(sc, sc == fn) {
			if v.Param || v.Name == "" || v.Loc.Kind == variables.LocConst && v.Loc.ConstBytes {
				// gdb's bt full skips LOC_CONST_BYTES symbols (a constant
				// given as a block).
				continue
			}
			val, err := r.Read(v, pf)
			text := r.Format(val, err, pf, fo)
			if err != nil && !errors.Is(err, variables.ErrOptimizedOut) {
				// gdb's print_variable_and_value wording.
				text = "<error reading variable " + v.Name + " (" + variables.ErrorMessage(err) + ")>"
			}
			fv.Locals = append(fv.Locals, FrameVar{Name: v.Name, Type: typeName(v.Type), Value: text})
		}
	}
	return fv
}

// readArg reads one parameter and its entry value.
func readArg(r *variables.Reader, v *variables.Variable, pf *Frame, fo variables.FormatOptions) FrameVar {
	val, err := r.Read(v, pf)
	fv := FrameVar{Name: v.Name, Type: typeName(v.Type), Value: r.Format(val, err, pf, fo)}
	if summaryOnly(v, err, fo) {
		return FrameVar{Name: v.Name, Type: fv.Type, Value: "..."}
	}
	ev, eerr := r.EntryValue(v, pf)
	var loop variables.EntryLoopError
	if errors.As(eerr, &loop) {
		// gdb shows an entry value's error unless it is the value's own.
		if err == nil || variables.ErrorMessage(err) != loop.Error() {
			e := "<error reading variable: " + loop.Error() + ">"
			fv.Entry = &e
		}
		return fv
	}
	if eerr != nil {
		return fv
	}
	if err == nil && val.Bytes != nil && string(val.Bytes) == string(ev.Bytes) && val.Unavailable == nil {
		fv.EntryEqual = true
	}
	e := r.Format(ev, nil, pf, fo)
	fv.Entry = &e
	return fv
}

func typeName(t *variables.Type) string {
	if t == nil {
		return "void"
	}
	return t.String()
}

// blockOrder returns the variables of scope sc in the order gdb's bt full
// prints them: declaration order for a function's own block (gdb keeps
// function blocks in a linear dictionary), the order of gdb's hashed
// dictionary for nested blocks.
func blockOrder(sc *variables.Scope, function bool) []*variables.Variable {
	var vars []*variables.Variable
	for _, v := range sc.Vars {
		if !v.Param && v.Name != "" {
			vars = append(vars, v)
		}
	}
	if function || sc.Kind != variables.ScopeBlock || len(vars) < 2 {
		return vars
	}
	// gdb's mdict_create_hashed: DICT_HASHTABLE_SIZE(nsyms) = nsyms/5+1
	// buckets, symbols inserted in reverse declaration order at the head of
	// their bucket's chain, read bucket by bucket.
	n := len(vars)/5 + 1
	buckets := make([][]*variables.Variable, n)
	for i := len(vars) - 1; i >= 0; i-- {
		h := gdbSearchNameHash(vars[i].Name) % uint32(n)
		buckets[h] = append([]*variables.Variable{vars[i]}, buckets[h]...)
	}
	out := vars[:0:0]
	for _, b := range buckets {
		out = append(out, b...)
	}
	return out
}

// gdbSearchNameHash is gdb's default_search_name_hash (C), which for plain
// identifiers is also cp_search_name_hash (C++).
func gdbSearchNameHash(s string) uint32 {
	next := func(h uint32, c byte) uint32 {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		return h*67 + uint32(c) - 113
	}
	iw := func() uint32 { // msymbol_hash_iw
		var h uint32
		for i := 0; i < len(s) && s[i] != '('; i++ {
			if s[i] != ' ' && s[i] != '\t' && s[i] != '\n' {
				h = next(h, s[i])
			}
		}
		return h
	}
	str := s
	if strings.HasPrefix(str, "_") {
		if !strings.HasPrefix(str, "_ada_") {
			return iw()
		}
		str = str[5:]
	}
	var h uint32
	for i := 0; i < len(str); i++ {
		switch c := str[i]; c {
		case '$', '.', 'X':
			if i == 0 && len(str) == len(s) {
				return iw()
			}
			return h
		case ' ', '(':
			return iw()
		case '_':
			if i+1 < len(str) && str[i+1] == '_' && i != 0 {
				c2 := byte(0)
				if i+2 < len(str) {
					c2 = str[i+2]
				}
				if (c2 < 'a' || c2 > 'z') && c2 != 'O' {
					return h
				}
				h = 0
				i++ // skip both underscores
				continue
			}
		case 'T':
			if str[i:] == "TKB" {
				return h
			}
		}
		h = next(h, str[i])
	}
	return h
}

// symbolizer names the symbol an address points into, as gdb's print
// symbol does (<cv+40>): an ELF symbol of the module the address is in
// whose range contains it.
func (s *Session) symbolizer(mods modules.List) func(uint64) string {
	return func(addr uint64) string { return s.demangledSymbolIn(mods, addr) }
}
