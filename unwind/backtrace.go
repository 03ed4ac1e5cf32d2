package unwind

// StackFrame is one line of a backtrace: a physical frame, or a function
// inlined into one (gdb's numbering counts both).
type StackFrame struct {
	Index int
	// PC follows gdb's conventions: the exact pc for frame 0 and for a frame a
	// signal interrupted, the return address for callers; inlined frames carry
	// the pc of the physical frame that contains them.
	PC       uint64
	LookupPC uint64 // where the symbol was looked up (PC or PC-1)
	SP, CFA  uint64
	Kind     FrameKind
	Physical int // index of the physical frame
	// Method is how the physical frame's caller was found (MethodNone at
	// the last frame).
	Method Method
	Module *Module
	Symbol Symbol
	// HasSymbol is false when the client knew nothing about LookupPC.
	HasSymbol bool
}

// Trace is a whole stack.
type Trace struct {
	Frames []StackFrame
	Stop   StopReason
	Err    error // why the walk stopped, for stops other than outermost/depth
	// HiddenInline is the number of inlined frames at frame 0's pc left out
	// above Frames[0] (a stop at the entry of inlined calls shown in the
	// caller, as gdb does: session.HiddenInline).
	HiddenInline int
}

// BacktraceOptions select what Backtrace asks the client for.
type BacktraceOptions struct {
	NoSymbols bool // do not call SymbolInfo at all
	NoInline  bool // one StackFrame per physical frame (the outermost function of each inline chain)
}

// Symbolize asks the client for the current frame's symbolic information at
// its lookup pc (uwx_get_sym_info): innermost inlined call first.
func (u *Unwinder) Symbolize() ([]Symbol, error) {
	return u.lookup.SymbolInfo(u.frame.Module, u.frame.LookupPC())
}

// Backtrace walks from the current frame to the end of the stack and returns
// every frame, expanding inline chains from the client's symbolic information.
func (u *Unwinder) Backtrace(opts BacktraceOptions) Trace {
	return u.backtrace(opts, nil)
}

// BacktraceFrames is Backtrace that also appends the physical frames of the
// same walk, with every register recovered, to phys (StackFrame.Physical
// indexes them): a debugger reads variables from those registers without
// walking the stack a second time.
func (u *Unwinder) BacktraceFrames(opts BacktraceOptions, phys []Frame) (Trace, []Frame) {
	t := u.backtrace(opts, &phys)
	return t, phys
}

func (u *Unwinder) backtrace(opts BacktraceOptions, phys *[]Frame) Trace {
	// Sized for the last walk's depth: a stop's stack is usually the
	// previous stop's give or take a few frames, and growing a slice of
	// frames this large copies (and write-barriers) every frame again.
	t := Trace{Frames: make([]StackFrame, 0, max(u.lastDepth, 16))}
	appender, _ := u.lookup.(SymbolAppender)
	rec := &u.rec
	// Recorded for a replay only from frame 0: the record's frames are
	// numbered from there.
	record := u.opts.ReuseFrames && u.depth == 0
	physical := 0
	for {
		f := &u.frame
		if record {
			rec.tracePhys = append(rec.tracePhys, int32(len(t.Frames)))
		}
		done, ok := u.replayedSymbols(opts)
		if !ok && record {
			done, ok = u.recordedSymbols(opts, physical, f)
		}
		if ok {
			// A frame replayed from the last walk, or one the last walk
			// symbolized at the same place: its symbols too.
			for _, sf := range done {
				sf.Index, sf.Physical = len(t.Frames), physical
				sf.SP, sf.CFA, sf.Method = f.SP, f.CFA, f.Method
				t.Frames = append(t.Frames, sf)
			}
			if phys != nil {
				*phys = append(*phys, *f)
			}
			physical++
			if !u.Step() {
				break
			}
			continue
		}
		var syms []Symbol
		if !opts.NoSymbols {
			if appender != nil {
				u.syms, _ = appender.AppendSymbolInfo(u.syms[:0], f.Module, f.LookupPC())
				syms = u.syms
			} else {
				syms, _ = u.lookup.SymbolInfo(f.Module, f.LookupPC())
			}
		}
		if opts.NoInline && len(syms) > 1 {
			syms = syms[len(syms)-1:]
		}
		base := StackFrame{PC: f.PC, LookupPC: f.LookupPC(), SP: f.SP, CFA: f.CFA, Kind: f.Kind,
			Physical: physical, Method: f.Method, Module: f.Module}
		if len(syms) == 0 {
			base.Index = len(t.Frames)
			t.Frames = append(t.Frames, base)
		}
		for i, s := range syms {
			sf := base
			sf.Index = len(t.Frames)
			sf.Symbol, sf.HasSymbol = s, true
			if i < len(syms)-1 {
				sf.Kind = KindInline
			}
			t.Frames = append(t.Frames, sf)
		}
		if phys != nil {
			*phys = append(*phys, *f)
		}
		physical++
		if !u.Step() {
			break
		}
	}
	if record && rec.complete {
		// Kept for the next walk's replay: a copy, the caller owns t.
		rec.tracePhys = append(rec.tracePhys, int32(len(t.Frames)))
		rec.trace = append(rec.trace[:0], t.Frames...)
		rec.traceOpts, rec.traced = opts, true
	}
	t.Stop, t.Err = u.stop, u.err
	u.lastDepth = len(t.Frames)
	clear(u.syms[:cap(u.syms)]) // keep no strings alive between walks
	return t
}
