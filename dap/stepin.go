package dap

import (
	"fmt"
	"strings"
	"sync"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/disasm"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
)

// Step-in targets: the functions the current line calls (the direct calls
// in its code). Stepping into one runs the line with a one-shot breakpoint
// past that function's prologue: the step ends there if the call is made,
// at the next line if it is not. A call through the PLT names the function
// the stub jumps to (not "f@plt"), and stepping into it stops in that
// function, in whichever module defines it.

type stepInTarget struct {
	name  string
	entry uint64
	plt   bool // entry is a PLT stub: the step stops where name is defined
}

var stepTargets sync.Map // *target.Context → []stepInTarget

func (s *Server) stepInTargets(r *request) (any, error) {
	var a godap.StepInTargetsArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.runnable()
	if err != nil {
		return nil, err
	}
	ref, ok := s.handles.frame(a.FrameId)
	if !ok {
		return nil, errorf("no frame %d", a.FrameId)
	}
	tr, _, err := d.trace(ref.thread)
	if err != nil {
		return nil, err
	}
	if ref.index >= len(tr.Frames) {
		return nil, errorf("no frame %d", a.FrameId)
	}
	pc := tr.Frames[ref.index].PC
	lr, ok := d.sess.SourceLineRange(ref.thread, pc)
	if !ok || lr.End <= lr.Start || lr.End-lr.Start > 1<<16 {
		return godap.StepInTargetsResponseBody{Targets: []godap.StepInTarget{}}, nil
	}
	code := make([]byte, lr.End-lr.Start)
	n, _ := d.proc.ReadMemory(lr.Start, code)
	var targets []stepInTarget
	out := []godap.StepInTarget{}
	for off := 0; off < n; {
		in, _ := disasm.Decode(code[off:n], lr.Start+uint64(off))
		if in.Len <= 0 {
			break
		}
		off += in.Len
		if _, isCall := in.IsCall(); !isCall {
			continue
		}
		dest, ok := in.BranchTarget()
		if !ok {
			continue
		}
		name, lo, _, err := d.sess.FunctionBounds(d.proc, dest)
		_, _, tramp := d.sess.Trampoline(ref.thread, dest)
		plt := tramp == target.TrampolinePLT && strings.HasSuffix(name, "@plt") && lo == dest
		switch {
		case plt:
			name = strings.TrimSuffix(name, "@plt")
		case err != nil || name == "":
			name = fmt.Sprintf("0x%x", dest)
		case lo != dest:
			name = fmt.Sprintf("%s+%d", name, dest-lo)
		}
		targets = append(targets, stepInTarget{name: name, entry: dest, plt: plt})
		out = append(out, godap.StepInTarget{Id: len(targets), Label: targetLabel(name)})
	}
	stepTargets.Store(ref.thread, targets)
	return godap.StepInTargetsResponseBody{Targets: out}, nil
}

// targetLabel is how a step-in target is shown: a C++ or Rust function by
// its demangled name (tinyxml2::XMLNode::InsertEndChild(tinyxml2::XMLNode*),
// as the frame names it), not its symbol's linkage name.
func targetLabel(name string) string {
	base, off, _ := strings.Cut(name, "+")
	if dm, ok := symbols.DemangleLinkageName(base); ok {
		if off != "" {
			return dm + "+" + off
		}
		return dm
	}
	return name
}

// stepInto steps a thread over its line with a stop at the entry of the
// step-in target id.
func (d *debuggee) stepInto(th *target.Context, id int) error {
	v, _ := stepTargets.Load(th)
	targets, _ := v.([]stepInTarget)
	if id <= 0 || id > len(targets) {
		return errorf("no step-in target %d (ask stepInTargets first)", id)
	}
	// Client breakpoints as far as the stepper is concerned (an internal
	// one would not end the step); onStop reports a hit as the step's end.
	var planted []*target.Breakpoint
	for _, entry := range d.stepIntoEntries(th, targets[id-1]) {
		tb, err := d.tgt.SetBreakpoint(d.proc, target.BreakpointSpec{Addr: d.sess.AfterPrologue(d.proc, entry)})
		if err != nil {
			continue
		}
		stepIntoBPs.Store(tb, true)
		planted = append(planted, tb)
	}
	if len(planted) == 0 {
		return errorf("cannot plant a breakpoint in %s", targets[id-1].name)
	}
	var once sync.Once
	remove := func() {
		once.Do(func() {
			for _, tb := range planted {
				stepIntoBPs.Delete(tb)
			}
			go func() {
				for _, tb := range planted {
					d.tgt.RemoveBreakpoint(tb)
				}
			}()
		})
	}
	// When the step ends (at the target or the next line), the breakpoint
	// goes.
	var rm func()
	rm = d.tgt.AddListener(func(e target.Event) {
		if e.Kind == target.EventStopped && e.Context == th || e.Kind == target.EventExited && e.Context.Process() == d.proc {
			remove()
			go rm()
		}
	})
	if err := th.Resume(target.ResumeStepOverLine, target.ResumeOptions{}); err != nil {
		remove()
		rm()
		return err
	}
	return nil
}

// stepIntoBPs are the breakpoints of steps into a target.
var stepIntoBPs sync.Map // *target.Breakpoint → true

// isStepInto reports whether a stop is at a step-into target.
func isStepInto(r *target.SuspendReason) bool {
	for _, bp := range r.Breakpoints {
		if _, ok := stepIntoBPs.Load(bp); ok {
			return true
		}
	}
	return false
}

// stepIntoEntries returns where a step into t may enter: its entry, or for
// a PLT stub the entries of the functions of that name outside any PLT (the
// stub's destination is bound lazily, so its GOT slot may not say yet).
func (d *debuggee) stepIntoEntries(th *target.Context, t stepInTarget) []uint64 {
	if !t.plt {
		return []uint64{t.entry}
	}
	addrs, _ := d.sess.FunctionAddresses(d.proc, t.name)
	if len(addrs) == 0 {
		addrs, _ = d.sess.SymbolAddresses(d.proc, t.name)
	}
	var out []uint64
	for _, a := range addrs {
		if _, _, k := d.sess.Trampoline(th, a); k == target.NotTrampoline {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return []uint64{t.entry}
	}
	return out
}
