package dap

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/variables"
)

// Frames and variable containers get numbers that are valid while their
// thread stays stopped (DAP's rule); a thread that runs drops its own.

// threadStop is what is known of one stopped thread, computed on demand
// and kept until it runs: one walk of its stack (the backtrace and the
// frames with registers that values are read in), the environments of its
// frames.
type threadStop struct {
	mu    sync.Mutex
	stack *session.Stack
	trace *unwind.Trace
	envs  map[int]*frameEnv
}

// frameRef names frame index (of the backtrace) of a thread.
type frameRef struct {
	thread *target.Context
	index  int
}

// varKind says what a variables reference lists.
type varKind int

const (
	varArgs varKind = iota
	varLocals
	varRegisters
	varChildren // the children of an expression's value
)

type varHandle struct {
	frame  int // frame id (0: no frame, globals only)
	thread *target.Context
	kind   varKind
	expr   string // varChildren: the expression whose children are listed
	// view, when set, lists this type's fields on expr (an anonymous
	// member's fields are named on its container).
	view *variables.Type
}

type handleTable struct {
	mu        sync.Mutex
	nextFrame int
	frames    map[int]frameRef
	nextVar   int
	vars      map[int]varHandle
	stops     map[*target.Context]*threadStop
}

func (h *handleTable) reset() {
	h.mu.Lock()
	h.frames, h.vars, h.stops = nil, nil, nil
	h.mu.Unlock()
}

// threadRan forgets what was known of a thread's stop and the references
// into it.
func (h *handleTable) threadRan(th *target.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stops[th] == nil {
		return
	}
	delete(h.stops, th)
	for id, f := range h.frames {
		if f.thread == th {
			delete(h.frames, id)
		}
	}
	for id, v := range h.vars {
		if v.thread == th {
			delete(h.vars, id)
		}
	}
}

func (h *handleTable) stop(th *target.Context) *threadStop {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stops == nil {
		h.stops = map[*target.Context]*threadStop{}
	}
	st := h.stops[th]
	if st == nil {
		st = &threadStop{envs: map[int]*frameEnv{}}
		h.stops[th] = st
	}
	return st
}

func (h *handleTable) frameID(th *target.Context, index int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.frames == nil {
		h.frames = map[int]frameRef{}
	}
	h.nextFrame++
	h.frames[h.nextFrame] = frameRef{th, index}
	return h.nextFrame
}

func (h *handleTable) frame(id int) (frameRef, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.frames[id]
	return f, ok
}

// maxHandles bounds the variables references one stop may make.
const maxHandles = 1 << 20

func (h *handleTable) varRef(v varHandle) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.vars == nil {
		h.vars = map[int]varHandle{}
	}
	if len(h.vars) >= maxHandles {
		return 0
	}
	h.nextVar++
	h.vars[h.nextVar] = v
	return h.nextVar
}

func (h *handleTable) variable(id int) (varHandle, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.vars[id]
	return v, ok
}

// trace returns the thread's backtrace at this stop.
func (d *debuggee) trace(th *target.Context) (*unwind.Trace, *threadStop, error) {
	if s, _, _ := th.State(); s == target.StateRunning {
		return nil, nil, errorf("thread %d is running", th.TID())
	}
	st := d.s.handles.stop(th)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stack == nil {
		stack, err := d.sess.Stack(th, session.StackOptions{})
		if err != nil {
			return nil, nil, err
		}
		tr := stack.Trace()
		st.stack, st.trace = stack, &tr
	}
	return st.trace, st, nil
}

// moreFrames ends a stack the unwinder stopped walking at its depth limit
// (unwind.Options.MaxDepth): gdb's words after a bt N. A stack overflow's
// core (jq 1.6's jv_free recursion: 209619 frames for gdb) otherwise ended
// at frame 4095 as if that were the outermost frame, main out of sight.
const moreFrames = "(More stack frames follow...)"

// thread finds a thread of the debuggee by DAP id (its TID).
func (d *debuggee) thread(tid int) (*target.Context, error) {
	if th := d.tgt.LookupPID(d.proc.PID(), tid); th != nil && !th.Exited() {
		return th, nil
	}
	return nil, errorf("no thread %d", tid)
}

func (s *Server) threads(r *request) (any, error) {
	d, err := s.current()
	if err != nil {
		return godap.ThreadsResponseBody{Threads: []godap.Thread{}}, nil
	}
	out := []godap.Thread{}
	for _, th := range d.proc.Children() {
		name := th.Name()
		if name == "" {
			name = fmt.Sprintf("thread %d", th.TID())
		} else {
			name = fmt.Sprintf("%s (%d)", name, th.TID())
		}
		out = append(out, godap.Thread{Id: th.TID(), Name: name})
	}
	return godap.ThreadsResponseBody{Threads: out}, nil
}

func (s *Server) stackTrace(r *request) (any, error) {
	var a godap.StackTraceArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	th, err := d.thread(a.ThreadId)
	if err != nil {
		return nil, err
	}
	tr, _, err := d.trace(th)
	if err != nil {
		return nil, err
	}
	total := len(tr.Frames)
	if tr.Stop == unwind.StopDepthLimit {
		total++ // the label saying so
	}
	start := max(a.StartFrame, 0)
	end := total
	if a.Levels > 0 && start+a.Levels < end {
		end = start + a.Levels
	}
	// Sized at once: a StackFrame is ~300 bytes of pointers, and growing
	// the slice frame by frame was a quarter of a warm stackTrace.
	frames := make([]godap.StackFrame, 0, max(end-start, 0))
	for i := start; i < end; i++ {
		if i == len(tr.Frames) {
			frames = append(frames, godap.StackFrame{Id: d.s.handles.frameID(th, i), Name: moreFrames, PresentationHint: "label"})
			continue
		}
		frames = append(frames, d.stackFrame(th, tr, i))
	}
	return stackTraceBody{StackFrames: frames, TotalFrames: total}, nil // encoded by hand (stackjson.go)
}

// stackFrame is frame i of a backtrace as DAP shows it: the function, an
// absolute source path and 1-based line (a caller's is the line of the
// call), the pc, and a hint for frames that are not real calls.
func (d *debuggee) stackFrame(th *target.Context, tr *unwind.Trace, i int) godap.StackFrame {
	f := tr.Frames[i]
	sf := godap.StackFrame{Id: d.s.handles.frameID(th, i), InstructionPointerReference: hexAddr(f.PC)}
	sym := f.Symbol
	sf.Name = sym.Function
	if sf.Name == "" {
		sf.Name = fmt.Sprintf("0x%x", f.PC)
		if f.Module != nil && f.Module.Name != "" {
			sf.Name += " in " + filepath.Base(f.Module.Name)
		}
	}
	if f.Module != nil {
		sf.ModuleId = f.Module.Name
		d.frameHint(f.Module)
	}
	switch f.Kind {
	case unwind.KindSignal:
		sf.Name = "<signal handler called>"
		sf.PresentationHint = "label"
	case unwind.KindTailCall:
		sf.PresentationHint = "subtle"
	}
	if sym.File != "" && sym.Line > 0 && f.Kind != unwind.KindSignal {
		sf.Source = frameSource(sym.File) // one per file (srccache.go)
		sf.Line = sym.Line
		sf.Column = max(sym.Column, 1)
	} else {
		sf.PresentationHint = firstNonEmpty(sf.PresentationHint, "subtle")
	}
	return sf
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sourceOf names a source file; a path the compiler recorded relative to
// a build directory not known here has no path a client could open.
func sourceOf(path string) *godap.Source {
	p := filepath.Clean(path)
	if !filepath.IsAbs(p) {
		return &godap.Source{Name: p, PresentationHint: "deemphasize"}
	}
	return &godap.Source{Name: filepath.Base(p), Path: p}
}

func hexAddr(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// frameEnv is everything evaluation in one frame needs.
type frameEnv struct {
	env    *expr.Env
	frame  *session.Frame
	reader *variables.Reader
	args   []*variables.Variable
	locals []*variables.Variable
	debug  bool
}

// env returns the evaluation environment of frame index of a thread.
func (d *debuggee) env(th *target.Context, index int) (*frameEnv, error) {
	tr, st, err := d.trace(th)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(tr.Frames) {
		return nil, errorf("no frame %d", index)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if fe := st.envs[index]; fe != nil {
		return fe, nil
	}
	sf := tr.Frames[index]
	f := st.stack.FrameOf(index)
	if f == nil {
		return nil, errorf("frame %d has no registers", index)
	}
	inline := 0
	for k := index - 1; k >= 0 && tr.Frames[k].Physical == sf.Physical; k-- {
		inline++
	}
	fe := d.frameEnvOf(th, f, inline)
	st.envs[index] = fe
	return fe, nil
}

// frameEnvOf builds the environment of a physical frame at an inline
// depth (0: the innermost function at its pc).
func (d *debuggee) frameEnvOf(th *target.Context, f *session.Frame, inline int) *frameEnv {
	fe := &frameEnv{frame: f}
	fe.env = &expr.Env{Frame: f, Arch: d.tgt.Arch(), Function: d.functionLookup(th, f), FunctionType: d.functionType(th), Global: d.globalLookup(th, f)}
	r, err := f.Reader()
	if err != nil || r == nil {
		return fe
	}
	fe.reader = r
	fe.env.Reader = r
	fe.env.Symbol = typeSymbol(r)
	chain, err := r.ScopesAt(variables.LookupPC(f))
	if err != nil || len(chain) == 0 {
		return fe
	}
	scopes := variables.FrameScopes(chain, inline)
	fe.env.Scopes = scopes
	if len(scopes) == 0 {
		return fe
	}
	fe.debug = true
	fn := scopes[len(scopes)-1]
	for _, sc := range scopes {
		for _, v := range sc.Vars {
			if v.Name == "" || v.Artificial && v.Name != "this" {
				continue
			}
			if v.Param && sc == fn {
				fe.args = append(fe.args, v)
			} else if !v.Param {
				fe.locals = append(fe.locals, v)
			}
		}
	}
	return fe
}

// globalLookup resolves names in the process's other modules.
func (d *debuggee) globalLookup(th *target.Context, f *session.Frame) func(string) (*variables.Variable, *variables.Reader, uint64, error) {
	return func(name string) (*variables.Variable, *variables.Reader, uint64, error) {
		mods, err := d.sess.Modules(th)
		if err != nil {
			return nil, nil, 0, err
		}
		// The executable first: a program's own globals are what is asked
		// for most, and searching a large library's DWARF first is slow.
		others := mods[:0:0]
		for _, m := range mods {
			if m.Main && (f == nil || m != f.Module()) {
				others = append(others, m)
			}
		}
		for _, m := range mods {
			if !m.Main && (f == nil || m != f.Module()) {
				others = append(others, m)
			}
		}
		return d.sess.FindGlobal(others, name)
	}
}

func (s *Server) scopes(r *request) (any, error) {
	var a godap.ScopesArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	ref, ok := s.handles.frame(a.FrameId)
	if !ok {
		return nil, errorf("no frame %d (frames are valid while their thread is stopped)", a.FrameId)
	}
	fe, err := d.env(ref.thread, ref.index)
	if err != nil {
		return nil, err
	}
	var out []godap.Scope
	if fe.debug {
		out = append(out,
			godap.Scope{Name: "Arguments", PresentationHint: "arguments", NamedVariables: len(fe.args),
				VariablesReference: s.handles.varRef(varHandle{frame: a.FrameId, thread: ref.thread, kind: varArgs})},
			godap.Scope{Name: "Locals", PresentationHint: "locals", NamedVariables: len(fe.locals),
				VariablesReference: s.handles.varRef(varHandle{frame: a.FrameId, thread: ref.thread, kind: varLocals})})
	}
	out = append(out, godap.Scope{Name: "Registers", PresentationHint: "registers",
		VariablesReference: s.handles.varRef(varHandle{frame: a.FrameId, thread: ref.thread, kind: varRegisters})})
	return godap.ScopesResponseBody{Scopes: out}, nil
}
