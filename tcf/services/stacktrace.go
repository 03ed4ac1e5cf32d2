package services

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/unwind"
)

// Stack frames have IDs "FP<n>.<thread ID>", n = 0 for the innermost frame;
// they are valid while the thread stays stopped. The stacks and the encoded
// answers about them are the stack cache's (stackcache.go).

// stackTraceSvc is the StackTrace service's commands over the stack cache.
type stackTraceSvc struct {
	target *target.Target
	stacks *stackCache
}

// RegisterStackTrace adds the StackTrace service.
func (a *Agent) RegisterStackTrace() {
	sts := &stackTraceSvc{target: a.target, stacks: a.stacks}
	svc := a.srv.Service("StackTrace")
	svc.Command("getChildren", sts.getChildren)
	svc.Command("getChildrenRange", sts.getChildrenRange)
	svc.Command("getContext", sts.getContext)
}

func (sts *stackTraceSvc) getChildren(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	_, st, err := threadStopOf(sts.target, sts.stacks, id)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	if st == nil { // a process has no frames
		c.Reply().Empty().RawJSON([]byte("[]")).Send()
		return
	}
	c.Reply().Empty().RawJSON(st.children).Send()
}

func (sts *stackTraceSvc) getChildrenRange(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	start, end := args.Int(), args.Int()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	thread, st, err := threadStopOf(sts.target, sts.stacks, id)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ids := []string{}
	if st != nil {
		for i := max(start, 0); i <= end && i < len(st.trace.Frames); i++ {
			ids = append(ids, frameID(i, thread))
		}
	}
	c.Reply().Empty().Data(ids).Send()
}

func (sts *stackTraceSvc) getContext(c *tcf.Call) {
	args := c.Args()
	ids := args.Strings()
	if err := args.End(); err != nil {
		c.Reply().Null().Error(err).Send()
		return
	}
	out := make([]byte, 0, 192*len(ids)+2)
	out = append(out, '[')
	var firstErr error
	for i, id := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		enc, err := sts.frameContextJSON(id)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			out = append(out, "null"...)
			continue
		}
		out = append(out, enc...)
	}
	out = append(out, ']')
	c.Reply().RawJSON(out).Error(firstErr).Send()
}

func frameID(n int, thread *target.Context) string {
	return "FP" + strconv.Itoa(n) + "." + string(thread.ID())
}

// ParseFrameID splits a frame ID into the frame index and its thread.
func (a *Agent) ParseFrameID(id string) (int, *target.Context, error) {
	return parseFrameID(a.target, id)
}

// parseFrameID splits a frame ID into the frame index and its thread of t.
func parseFrameID(t *target.Target, id string) (int, *target.Context, error) {
	rest, ok := strings.CutPrefix(id, "FP")
	head, tid, ok2 := strings.Cut(rest, ".")
	n, err := strconv.Atoi(head)
	if !ok || !ok2 || err != nil || n < 0 {
		return 0, nil, tcf.Errorf(tcf.CodeInvalidContext, "no stack frame %q", id)
	}
	thread, err := t.Lookup(target.ID(tid))
	if err != nil {
		return 0, nil, err
	}
	return n, thread, nil
}

// threadStopOf returns the cached stop of the stopped thread of t named
// id (nil for a process).
func threadStopOf(t *target.Target, stacks *stackCache, id string) (*target.Context, *threadStop, error) {
	ctx, err := t.Lookup(target.ID(id))
	if err != nil {
		return nil, nil, err
	}
	if ctx.IsProcess() {
		return ctx, nil, nil
	}
	st, err := stacks.stop(ctx)
	return ctx, st, err
}

// Stack returns the stack of a stopped thread, unwinding it on first use.
func (a *Agent) Stack(thread *target.Context) (*unwind.Trace, error) {
	return a.stacks.stack(thread)
}

// newThreadStop encodes the StackTrace answers about one walk, whose
// frames have the IDs frameIDs. Answers that are the same as at the stop
// before (prev, if any) are taken from it.
func newThreadStop(thread stackOwner, tr *unwind.Trace, frameIDs []string, prev *threadStop) *threadStop {
	n := len(tr.Frames)
	st := &threadStop{trace: tr, frames: make([][]byte, n)}
	// A frame's answer depends on its own fields, the stack's depth (its
	// Level) and the frames above it (its return address): with as many
	// frames as before, those from same on are answered as before.
	same := n
	if prev != nil && len(prev.trace.Frames) == n {
		for same > 0 && tr.Frames[same-1] == prev.trace.Frames[same-1] {
			same--
		}
		copy(st.frames[same:], prev.frames[same:])
		st.children = prev.children // the same frame IDs
	} else {
		st.children = frameList(thread.thread, frameIDs, n)
	}
	buf := make([]byte, 0, 224*same) // a frame's object is 150-220 bytes
	for i := range same {
		start := len(buf)
		p := frameContext(tr, i, thread, frameIDs[i])
		buf = appendFrameProps(buf, &p)
		st.frames[i] = buf[start:len(buf):len(buf)]
	}
	return st
}

// stackOwner names the thread whose stack it is, and its process.
type stackOwner struct{ thread, process string }

// frameList is getChildren's answer: the IDs of n frames, bottom first.
func frameList(thread string, frameIDs []string, n int) []byte {
	ids := make([]byte, 0, n*(len(thread)+8)+2)
	ids = append(ids, '[')
	for i := n - 1; i >= 0; i-- { // bottom (outermost) frame first
		if i < n-1 {
			ids = append(ids, ',')
		}
		ids = tcf.AppendJSONString(ids, frameIDs[i])
	}
	return append(ids, ']')
}

// frameProps are a stack frame's StackTrace properties. A struct, not a map:
// clients fetch every frame of every stack they show, so the encoding is on
// the hot path.
type frameProps struct {
	ID        string `json:"ID"`
	ParentID  string `json:"ParentID"`
	ProcessID string `json:"ProcessID"`
	Index     int    `json:"Index"`
	Level     int    `json:"Level"`
	TopFrame  bool   `json:"TopFrame"`
	Walk      bool   `json:"Walk"`
	IP        uint64 `json:"IP"`
	FP        uint64 `json:"FP,omitempty"`
	RP        uint64 `json:"RP,omitempty"`
	// Inlined, FuncID and CodeArea describe a frame of an inline chain (a
	// physical frame shown as the functions inlined into it and the one
	// they were inlined into), as the C agent writes them: Inlined is the
	// frame's level above the real function (0: omitted); FuncID names the
	// frame's own function (Symbols.findByAddr at the pc names the
	// innermost); CodeArea, on every frame but the innermost, is where in
	// its function the frame is — the line of the inlined call it holds
	// (LineNumbers.mapToSource at the pc gives the innermost line). FuncID
	// and CodeArea also name the function and line of a caller frame
	// whose pc is exact (see frameContext).
	Inlined  int            `json:"Inlined,omitempty"`
	FuncID   string         `json:"FuncID,omitempty"`
	CodeArea *frameCodeArea `json:"CodeArea,omitempty"`
	// TailCall marks a frame of a function that tail-called the frame
	// below it (rebuilt from call-site DWARF, as gdb does): it has no
	// registers of its own.
	TailCall bool `json:"TailCall,omitempty"`
}

// frameCodeArea is a frame's CodeArea property.
type frameCodeArea struct {
	SAddr uint64 `json:"SAddr"`
	SLine int    `json:"SLine,omitempty"`
	SCol  int    `json:"SCol,omitempty"`
	File  string `json:"File,omitempty"`
	Dir   string `json:"Dir,omitempty"`
}

// frameContextJSON returns the encoded getContext object of a frame ID.
func (sts *stackTraceSvc) frameContextJSON(id string) ([]byte, error) {
	n, thread, err := parseFrameID(sts.target, id)
	if err != nil {
		return nil, err
	}
	return sts.stacks.frameJSON(thread, n, id)
}

// frameContext gives the properties of frame n of a walk.
func frameContext(tr *unwind.Trace, n int, thread stackOwner, id string) frameProps {
	f := &tr.Frames[n]
	p := frameProps{
		ID:        id,
		ParentID:  thread.thread,
		ProcessID: thread.process,
		Index:     n,
		Level:     len(tr.Frames) - 1 - n,
		TopFrame:  n == 0,
		Walk:      f.Kind != unwind.KindNormal || f.Module != nil,
		IP:        f.PC,
		FP:        f.CFA,
		TailCall:  f.Kind == unwind.KindTailCall,
	}
	// A caller whose pc is not a return address (the signal trampoline, and
	// the frame a signal interrupted) is looked up at its pc, where a client
	// would look at pc-1: it gets the same two properties.
	inner, outer := inlineChain(tr, n)
	exact := n > 0 && f.LookupPC == f.PC
	// At the entry of inlined calls the stop may hide (gdb): the frames
	// of physical frame 0 are then below the innermost the pc names.
	hidden := 0
	if inner == 0 {
		hidden = tr.HiddenInline
	}
	if outer > inner || exact || hidden > 0 {
		p.Inlined = outer - n
		if f.HasSymbol && f.Symbol.Function != "" {
			p.FuncID = functionID(thread.process, f.LookupPC, n-inner+hidden)
		}
		if (n > inner || exact || hidden > 0) && f.Symbol.Line > 0 {
			p.CodeArea = &frameCodeArea{SAddr: f.LookupPC, SLine: f.Symbol.Line, SCol: f.Symbol.Column,
				File: filepath.Base(f.Symbol.File), Dir: filepath.Dir(f.Symbol.File)}
		}
	}
	// The return address of this frame is the pc of the next physical frame.
	for k := n + 1; k < len(tr.Frames); k++ {
		if !samePhysical(tr, k, n) {
			p.RP = tr.Frames[k].PC
			break
		}
	}
	return p
}

// inlineChain returns the first and last index of the frames that share
// frame n's physical frame: the inlined calls (innermost first) and the
// function they were inlined into.
func inlineChain(tr *unwind.Trace, n int) (inner, outer int) {
	inner, outer = n, n
	for inner > 0 && samePhysical(tr, inner-1, n) {
		inner--
	}
	for outer+1 < len(tr.Frames) && samePhysical(tr, outer+1, n) {
		outer++
	}
	return inner, outer
}

// samePhysical reports whether frames i and j are one physical frame's
// inline chain (a tail-call frame is a frame of its own).
func samePhysical(tr *unwind.Trace, i, j int) bool {
	a, b := &tr.Frames[i], &tr.Frames[j]
	return a.Physical == b.Physical && a.Kind != unwind.KindTailCall && b.Kind != unwind.KindTailCall || i == j
}

// appendFrameProps encodes p as encoding/json encodes the struct (field
// order, omitempty), without reflection.
func appendFrameProps(dst []byte, p *frameProps) []byte {
	dst = append(dst, `{"ID":`...)
	dst = tcf.AppendJSONString(dst, p.ID)
	dst = append(dst, `,"ParentID":`...)
	dst = tcf.AppendJSONString(dst, p.ParentID)
	dst = append(dst, `,"ProcessID":`...)
	dst = tcf.AppendJSONString(dst, p.ProcessID)
	dst = append(dst, `,"Index":`...)
	dst = strconv.AppendInt(dst, int64(p.Index), 10)
	dst = append(dst, `,"Level":`...)
	dst = strconv.AppendInt(dst, int64(p.Level), 10)
	dst = append(dst, `,"TopFrame":`...)
	dst = strconv.AppendBool(dst, p.TopFrame)
	dst = append(dst, `,"Walk":`...)
	dst = strconv.AppendBool(dst, p.Walk)
	dst = append(dst, `,"IP":`...)
	dst = strconv.AppendUint(dst, p.IP, 10)
	if p.FP != 0 {
		dst = append(dst, `,"FP":`...)
		dst = strconv.AppendUint(dst, p.FP, 10)
	}
	if p.RP != 0 {
		dst = append(dst, `,"RP":`...)
		dst = strconv.AppendUint(dst, p.RP, 10)
	}
	if p.Inlined != 0 {
		dst = append(dst, `,"Inlined":`...)
		dst = strconv.AppendInt(dst, int64(p.Inlined), 10)
	}
	if p.FuncID != "" {
		dst = append(dst, `,"FuncID":`...)
		dst = tcf.AppendJSONString(dst, p.FuncID)
	}
	if a := p.CodeArea; a != nil {
		dst = append(dst, `,"CodeArea":{"SAddr":`...)
		dst = strconv.AppendUint(dst, a.SAddr, 10)
		if a.SLine != 0 {
			dst = append(dst, `,"SLine":`...)
			dst = strconv.AppendInt(dst, int64(a.SLine), 10)
		}
		if a.SCol != 0 {
			dst = append(dst, `,"SCol":`...)
			dst = strconv.AppendInt(dst, int64(a.SCol), 10)
		}
		if a.File != "" {
			dst = append(dst, `,"File":`...)
			dst = tcf.AppendJSONString(dst, a.File)
		}
		if a.Dir != "" {
			dst = append(dst, `,"Dir":`...)
			dst = tcf.AppendJSONString(dst, a.Dir)
		}
		dst = append(dst, '}')
	}
	if p.TailCall {
		dst = append(dst, `,"TailCall":true`...)
	}
	return append(dst, '}')
}
