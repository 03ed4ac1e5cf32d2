package dap

import (
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestStackDepthLimit: a stack deeper than the unwinder walks (4096
// frames) ends with a label frame, "(More stack frames follow...)" as gdb
// says after bt N, counted in totalFrames; its scopes are refused; the
// console's bt ends with the same line. Found on a core of jq 1.6 (209619
// frames of jv_free recursion): the stack ended at frame 4095 as if it
// were the outermost.
func TestStackDepthLimit(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"dap_deep.c"}, Flags: []string{"-O0"}, Name: "dap_deep"})
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "bottom"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	top := c.request("stackTrace", map[string]any{"threadId": st.Body.ThreadId, "startFrame": 0, "levels": 3}).(*godap.StackTraceResponse).Body
	if len(top.StackFrames) != 3 || top.StackFrames[0].Name != "bottom" || top.StackFrames[1].Name != "down" {
		t.Fatalf("top frames: %+v", top.StackFrames)
	}
	if top.TotalFrames != 4097 {
		t.Fatalf("totalFrames %d, want 4096 frames and the label", top.TotalFrames)
	}
	end := c.request("stackTrace", map[string]any{"threadId": st.Body.ThreadId, "startFrame": 4094, "levels": 20}).(*godap.StackTraceResponse).Body.StackFrames
	if len(end) != 3 || end[1].Name != "down" || end[2].Name != "(More stack frames follow...)" || end[2].PresentationHint != "label" {
		t.Fatalf("the last frames: %+v", end)
	}
	if r := c.errorResponse(c.send("scopes", map[string]any{"frameId": end[2].Id})); r == nil || r.Success {
		t.Errorf("scopes of the label: %+v", r)
	}
	bt := c.evaluate("bt", 0, "repl").Body.Result
	if !strings.HasSuffix(bt, "\n(More stack frames follow...)") || strings.Count(bt, "\n") != 4096 {
		t.Errorf("bt: %d lines, ends %q", strings.Count(bt, "\n")+1, bt[max(len(bt)-120, 0):])
	}
	c.request("disconnect", nil)
}
