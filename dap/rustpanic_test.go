package dap

import (
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestRustPanicFilter: the "rust_panic" exception filter stops a panicking
// Rust program at the standard library's rust_panic, the panicking
// function on its stack at the panic's line; exceptionInfo says it is a
// panic; continuing ends the program with a panic's exit code, 101.
func TestRustPanicFilter(t *testing.T) {
	prog := testprog.BuildRust(t, "dap_panic.rs", "dap_panic", "-g", "-C", "opt-level=0")
	c := newClient(t)
	caps := c.initialize()
	found := false
	for _, f := range caps.ExceptionBreakpointFilters {
		found = found || f.Filter == "rust_panic"
	}
	if !found {
		t.Fatalf("no rust_panic filter: %+v", caps.ExceptionBreakpointFilters)
	}
	c.request("launch", map[string]any{"program": prog})
	c.event("initialized")
	r := c.request("setExceptionBreakpoints", map[string]any{"filters": []string{"rust_panic"}}).(*godap.SetExceptionBreakpointsResponse)
	if len(r.Body.Breakpoints) != 1 || !r.Body.Breakpoints[0].Verified {
		t.Errorf("rust_panic not verified: %+v", r.Body.Breakpoints)
	}
	c.request("configurationDone", nil)
	st := c.stopped()
	if st.Body.Reason != "exception" || st.Body.Description != "Rust panic" {
		t.Fatalf("stopped: %+v", st.Body)
	}
	frames := c.stack(st.Body.ThreadId)
	if !strings.HasSuffix(frames[0].Name, "rust_panic") {
		t.Errorf("top frame %q, want rust_panic", frames[0].Name)
	}
	line := markerLine(t, "dap_panic.rs", "panic")
	ok := false
	for _, f := range frames {
		if f.Name == "dap_panic::check" && f.Line == line {
			ok = true
		}
	}
	if !ok {
		t.Errorf("no dap_panic::check at line %d on the stack: %+v", line, frames)
	}
	info := c.request("exceptionInfo", map[string]any{"threadId": st.Body.ThreadId}).(*godap.ExceptionInfoResponse)
	if info.Body.ExceptionId != "Rust panic" {
		t.Errorf("exceptionInfo: %+v", info.Body)
	}
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	ex := c.event("exited").(*godap.ExitedEvent)
	if ex.Body.ExitCode != 101 {
		t.Errorf("exit code %d, want 101 (a panic)", ex.Body.ExitCode)
	}
	c.request("disconnect", nil)
}
