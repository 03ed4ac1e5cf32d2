package dap

import (
	"fmt"
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestDebugHintsOnlyForShownFrames: the console hints at missing debug
// information for a file only once one of its frames is shown, and once:
// a function breakpoint (which opens every module to look the name up)
// says nothing about libgcc_s, and the stack through libstdc++'s thread
// routine names libstdc++. Found attached to Debian's redis-server: the
// console listed fifteen libraries, two of which had frames.
func TestDebugHintsOnlyForShownFrames(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"dap_hints.cc"}, Flags: []string{"-O0", "-pthread"}})
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "hit"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	frames := c.stack(st.Body.ThreadId)
	inLibstdcxx := false
	for _, f := range frames {
		inLibstdcxx = inLibstdcxx || strings.Contains(fmt.Sprint(f.ModuleId), "libstdc++")
	}
	if !inLibstdcxx {
		t.Fatalf("no frame in libstdc++: %+v", frames)
	}
	c.stack(st.Body.ThreadId)
	out := c.output("console")
	if strings.Contains(out, "libgcc_s") {
		t.Errorf("a hint for libgcc_s, which has no frame: %q", out)
	}
	// libstdc++ has a frame: its hint, where Debian's libstdc++ has no
	// DWARF (no debug package installed), comes once.
	if n := strings.Count(out, "no debug information for /usr/lib/x86_64-linux-gnu/libstdc++"); n > 1 {
		t.Errorf("libstdc++'s hint %d times: %q", n, out)
	}
	t.Logf("console: %q", out)
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	c.wait("exited", func(m godap.Message) bool { _, ok := m.(*godap.ExitedEvent); return ok })
}
