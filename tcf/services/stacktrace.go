package services

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/unwind"
)

// Stack frames have IDs "FP<n>.<thread ID>", n = 0 for the innermost frame;
// they are valid while the thread stays stopped. A thread's stack is unwound
// once per stop and cached until it runs again.

type stackCache struct {
	mu     sync.Mutex
	traces map[*target.Context]*unwind.Trace
}

// RegisterStackTrace adds the StackTrace service.
func (a *Agent) RegisterStackTrace() {
	a.stacks.traces = map[*target.Context]*unwind.Trace{}
	svc := a.srv.Service("StackTrace")
	svc.Command("getChildren", func(c *tcf.Call) {
		args := c.Args()
		id := args.String()
		if err := args.End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		thread, tr, err := a.trace(id)
		if err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		ids := []string{}
		if tr != nil {
			// Bottom (outermost) frame first.
			for i := len(tr.Frames) - 1; i >= 0; i-- {
				ids = append(ids, frameID(i, thread))
			}
		}
		c.Reply().Error(nil).Data(ids).Send()
	})
	svc.Command("getChildrenRange", func(c *tcf.Call) {
		args := c.Args()
		id := args.String()
		start, end := args.Int(), args.Int()
		if err := args.End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		thread, tr, err := a.trace(id)
		if err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		ids := []string{}
		if tr != nil {
			for i := max(start, 0); i <= end && i < len(tr.Frames); i++ {
				ids = append(ids, frameID(i, thread))
			}
		}
		c.Reply().Error(nil).Data(ids).Send()
	})
	svc.Command("getContext", func(c *tcf.Call) {
		args := c.Args()
		ids := args.Strings()
		if err := args.End(); err != nil {
			c.Reply().Null().Error(err).Send()
			return
		}
		out := make([]*frameProps, len(ids))
		var firstErr error
		for i, id := range ids {
			props, err := a.frameContext(id)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			out[i] = props
		}
		c.Reply().Data(out).Error(firstErr).Send()
	})
}

func frameID(n int, thread *target.Context) string { return fmt.Sprintf("FP%d.%s", n, thread.ID()) }

// ParseFrameID splits a frame ID into the frame index and its thread.
func (a *Agent) ParseFrameID(id string) (int, *target.Context, error) {
	rest, ok := strings.CutPrefix(id, "FP")
	head, tid, ok2 := strings.Cut(rest, ".")
	n, err := strconv.Atoi(head)
	if !ok || !ok2 || err != nil || n < 0 {
		return 0, nil, tcf.Errorf(tcf.CodeInvalidContext, "no stack frame %q", id)
	}
	thread, err := a.lookup(tid)
	if err != nil {
		return 0, nil, err
	}
	return n, thread, nil
}

// trace returns a stopped thread's cached stack (nil for a process).
func (a *Agent) trace(id string) (*target.Context, *unwind.Trace, error) {
	ctx, err := a.lookup(id)
	if err != nil {
		return nil, nil, err
	}
	if ctx.IsProcess() {
		return ctx, nil, nil
	}
	tr, err := a.Stack(ctx)
	return ctx, tr, err
}

// Stack returns the stack of a stopped thread, unwinding it on first use.
func (a *Agent) Stack(thread *target.Context) (*unwind.Trace, error) {
	if s, _, _ := thread.State(); s == target.StateRunning {
		return nil, target.Errorf(target.CodeIsRunning, "stack trace", thread.ID(), nil)
	}
	a.stacks.mu.Lock()
	tr := a.stacks.traces[thread]
	a.stacks.mu.Unlock()
	if tr != nil {
		return tr, nil
	}
	t, err := a.session.Backtrace(thread, session.StackOptions{})
	if err != nil {
		return nil, err
	}
	a.stacks.mu.Lock()
	a.stacks.traces[thread] = &t
	a.stacks.mu.Unlock()
	return &t, nil
}

// forgetStack drops a thread's cached stack when it runs or exits.
func (a *Agent) forgetStack(thread *target.Context) {
	a.stacks.mu.Lock()
	delete(a.stacks.traces, thread)
	a.stacks.mu.Unlock()
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
	Inlined   bool   `json:"Inlined,omitempty"`
}

func (a *Agent) frameContext(id string) (*frameProps, error) {
	n, thread, err := a.ParseFrameID(id)
	if err != nil {
		return nil, err
	}
	tr, err := a.Stack(thread)
	if err != nil {
		return nil, err
	}
	if n >= len(tr.Frames) {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "no stack frame %q", id)
	}
	f := tr.Frames[n]
	p := &frameProps{
		ID:        id,
		ParentID:  string(thread.ID()),
		ProcessID: string(thread.Process().ID()),
		Index:     n,
		Level:     len(tr.Frames) - 1 - n,
		TopFrame:  n == 0,
		Walk:      f.Kind != unwind.KindNormal || f.Module != nil,
		IP:        f.PC,
		FP:        f.CFA,
		Inlined:   f.Kind == unwind.KindInline,
	}
	// The return address of this frame is the pc of the next physical frame.
	for k := n + 1; k < len(tr.Frames); k++ {
		if tr.Frames[k].Physical != f.Physical {
			p.RP = tr.Frames[k].PC
			break
		}
	}
	return p, nil
}
