package dap

import (
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestResumeResponseBeforeStop: the response to continue and next comes
// before the stopped event the resume leads to, even when the thread is
// at its next breakpoint at once (a breakpoint in a short loop). VS Code
// marks the threads running when the response comes: a stop sent before it
// would leave a stopped program shown as running. Before the fix, about one
// continue in three was answered after its stop.
func TestResumeResponseBeforeStop(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.launch(prog, nil)
	src := testprog.Source("dap_prog.c")
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": src}, "breakpoints": []map[string]any{
		{"line": markerLine(t, "dap_prog.c", "call")},
	}})
	c.request("configurationDone", nil)
	st := c.stopped()
	for i := 0; i < 4; i++ {
		command := "continue"
		if i%2 == 1 {
			command = "next" // the loop's next line is the call line again
		}
		seq := c.send(command, map[string]any{"threadId": st.Body.ThreadId})
		c.response(seq)
		st = c.stopped()
		// Where each was received: the response must come first.
		c.mu.Lock()
		resp, stop := -1, -1
		for k, m := range c.msgs {
			if r, ok := m.(godap.ResponseMessage); ok && r.GetResponse().RequestSeq == seq {
				resp = k
			}
			if e, ok := m.(*godap.StoppedEvent); ok && e == st {
				stop = k
			}
		}
		c.mu.Unlock()
		if resp < 0 || stop < 0 || stop < resp {
			t.Fatalf("%s %d: the stopped event (message %d) came before the response (message %d)", command, i, stop, resp)
		}
	}
}
