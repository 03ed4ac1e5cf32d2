package profiling

import (
	"debug/elf"

	"github.com/ianlancetaylor/demangle"

	"github.com/sondedbg/sonde/perfdata"
	"github.com/sondedbg/sonde/symbols/elfsym"
	"github.com/sondedbg/sonde/unwind"
)

// perfToDWARF maps perf's x86-64 user register numbers to DWARF's.
var perfToDWARF = [...]int{
	perfdata.RegAX: 0, perfdata.RegBX: 3, perfdata.RegCX: 2, perfdata.RegDX: 1,
	perfdata.RegSI: 4, perfdata.RegDI: 5, perfdata.RegBP: 6, perfdata.RegSP: 7,
	perfdata.RegIP: 16, perfdata.RegFlags: 49, perfdata.RegCS: 51, perfdata.RegSS: 52,
	12: -1, 13: -1, 14: -1, 15: -1, // ds, es, fs, gs: never sampled
	16: 8, 17: 9, 18: 10, 19: 11, 20: 12, 21: 13, 22: 14, 23: 15,
}

// userRegisters converts a sample's user registers.
func userRegisters(s *perfdata.Sample) (unwind.Registers, bool) {
	var regs unwind.Registers
	if s.RegsABI == 0 {
		return regs, false
	}
	for reg, dw := range perfToDWARF {
		if v, ok := s.Reg(reg); ok && dw >= 0 && (reg != 12 && reg != 13 && reg != 14 && reg != 15) {
			regs.Set(dw, v)
		}
	}
	_, okIP := regs.Get(16)
	_, okSP := regs.Get(7)
	return regs, okIP && okSP
}

func (b *Builder) addSample(rec *perfdata.Record) *Sample {
	s := &rec.Sample
	out := &b.sample
	*out = Sample{PID: s.PID, TID: s.TID, Time: s.Time, CPU: s.CPU, Period: s.Period, Frames: out.Frames[:0]}
	sp := b.space(s.PID)
	out.Comm = sp.comm
	// The callchain: kernel frames (innermost), then in frame-pointer
	// recordings the user frames; in dwarf recordings only the user ip.
	var user []uint64
	ctx := perfdata.ContextKernel
	if rec.CPUMode() == perfdata.MiscUser {
		ctx = perfdata.ContextUser
	}
	for _, ip := range s.Callchain {
		if ip >= perfdata.ContextMax {
			ctx = ip
			continue
		}
		switch ctx {
		case perfdata.ContextKernel:
			out.Frames = append(out.Frames, b.kernelFrame(ip))
		case perfdata.ContextUser:
			user = append(user, ip)
		}
	}
	if len(s.Callchain) == 0 && rec.CPUMode() == perfdata.MiscKernel && s.IP != 0 {
		out.Frames = append(out.Frames, b.kernelFrame(s.IP))
	}
	regs, haveRegs := userRegisters(s)
	if haveRegs && !b.inModule(sp, regs.Values[16]) {
		// A user pc in no mapping: perf's dwarf unwinder gives up there
		// (a kernel sample during exec, before the new image is mapped;
		// JIT code). Only a user-mode sample shows it, as [unknown].
		haveRegs = false
		user = nil
		if rec.CPUMode() == perfdata.MiscUser {
			out.Frames = append(out.Frames, Frame{PC: regs.Values[16]})
		}
	}
	switch {
	case haveRegs:
		b.unwindUser(out, sp, &regs, s.Stack)
	case len(user) > 0:
		b.chainUser(out, sp, user)
	case rec.CPUMode() == perfdata.MiscUser && s.IP != 0:
		b.chainUser(out, sp, []uint64{s.IP})
	}
	return out
}

// inModule reports whether pc is in one of the space's files.
func (b *Builder) inModule(sp *space, pc uint64) bool {
	proc := b.process(sp)
	if proc == nil {
		return false
	}
	um, _ := proc.LookupModule(pc)
	return um != nil
}

// unwindUser walks the sampled stack copy from the user registers.
func (b *Builder) unwindUser(out *Sample, sp *space, regs *unwind.Registers, stack []byte) {
	proc := b.process(sp)
	if proc == nil {
		pc, _ := regs.Get(16)
		out.Frames = append(out.Frames, Frame{PC: pc})
		return
	}
	stackAddr, _ := regs.Get(7)
	if sp.th == nil {
		sp.th = proc.Thread(regs, stack, stackAddr)
	} else {
		sp.th.Reset(regs, stack, stackAddr)
	}
	frames, stop, _ := sp.th.Walk(b.frames[:0])
	b.frames = frames
	if len(frames) > b.opts.MaxFrames {
		frames = frames[:b.opts.MaxFrames]
	}
	for i := range frames {
		f := &frames[i]
		out.Frames = b.appendNames(out.Frames, sp, f.Module, f.PC, f.LookupPC())
	}
	if stop != unwind.StopOutermost && stop != unwind.StopDepthLimit {
		out.Stop = stop.String()
	}
}

// chainUser names the user frames of a frame-pointer callchain: the first
// is the sampled pc, the rest return addresses.
func (b *Builder) chainUser(out *Sample, sp *space, ips []uint64) {
	proc := b.process(sp)
	for i, ip := range ips {
		if i >= b.opts.MaxFrames {
			break
		}
		lookup := ip
		if i > 0 && ip > 0 {
			lookup = ip - 1
		}
		var um *unwind.Module
		if proc != nil {
			um, _ = proc.LookupModule(ip)
		}
		out.Frames = b.appendNames(out.Frames, sp, um, ip, lookup)
	}
}

// appendNames appends the frames one physical frame stands for: its inline
// chain (or one ELF-symbol frame with NoInline), named once per file address.
func (b *Builder) appendNames(dst []Frame, sp *space, um *unwind.Module, pc, lookup uint64) []Frame {
	if um == nil {
		return append(dst, Frame{PC: pc})
	}
	key := nameKey{module: um.Name, rel: lookup - um.Bias, caller: pc != lookup}
	names, ok := b.names[key]
	if !ok {
		names = b.lookupNames(sp, um, lookup)
		b.names[key] = names
	}
	for _, n := range names {
		n.PC = pc
		dst = append(dst, n)
	}
	return dst
}

func (b *Builder) lookupNames(sp *space, um *unwind.Module, lookup uint64) []Frame {
	proc := sp.proc
	base := Frame{Module: um.Name}
	if proc == nil {
		return []Frame{base}
	}
	if b.opts.NoInline {
		bin := proc.Binary(um)
		if bin == nil {
			return []Frame{base}
		}
		if t, err := bin.Symbols(); err == nil {
			if sym, _, ok := t.Lookup(lookup - um.Bias); ok {
				base.Function = demangled(perfChoice(sym, t.Aliases(sym.Addr)).Name)
			}
		}
		return []Frame{base}
	}
	syms, _ := proc.SymbolInfo(um, lookup)
	if len(syms) == 0 {
		return []Frame{base}
	}
	out := make([]Frame, len(syms))
	for i, s := range syms {
		out[i] = Frame{Function: s.Function, File: s.File, Line: s.Line, Module: um.Name, Inlined: i < len(syms)-1}
	}
	return out
}

// perfChoice picks among the symbols at one address the one perf names
// (tools/perf/util/symbol.c, choose_best_symbol): sized over zero-size,
// strong over weak, global over local, fewer leading underscores, then the
// longest name (fstatat64 over fstatat, __GI___tunables_init over
// __tunables_init).
func perfChoice(sym elfsym.Symbol, aliases []elfsym.Symbol) elfsym.Symbol {
	best := sym
	for _, a := range aliases {
		if a.Kind != sym.Kind && sym.Size != 0 && a.Size == 0 {
			continue
		}
		if perfPrefers(a, best) {
			best = a
		}
	}
	return best
}

func perfPrefers(a, b elfsym.Symbol) bool {
	if (a.Size > 0) != (b.Size > 0) {
		return a.Size > 0
	}
	if aw, bw := a.Bind == elf.STB_WEAK, b.Bind == elf.STB_WEAK; aw != bw {
		return bw
	}
	if ag, bg := a.Bind == elf.STB_GLOBAL, b.Bind == elf.STB_GLOBAL; ag != bg {
		return ag
	}
	if au, bu := leadingUnderscores(a.Name), leadingUnderscores(b.Name); au != bu {
		return au < bu
	}
	return len(a.Name) > len(b.Name)
}

func leadingUnderscores(s string) int {
	n := 0
	for n < len(s) && s[n] == '_' {
		n++
	}
	return n
}

// demangled is a C++ or Rust name as perf prints it.
func demangled(name string) string {
	if s, err := demangle.ToString(name); err == nil {
		return s
	}
	return name
}
