package dap

import (
	"strings"
	"testing"

	godap "github.com/google/go-dap"
)

// TestReplPrintCommands: the debug console takes gdb's print and whatis
// as a gdb user types them (found in jq's console: "p/x a.kind_flags" was
// "Syntax error: unexpected "a" after the expression"): p, print, p/x,
// p/d, whatis; a format sonde does not have is refused naming those it
// has; a line that evaluates as an expression stays one (a program's
// variable called p: "p + 1").
func TestReplPrintCommands(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	pid := c.launch(prog, map[string]any{"stopOnEntry": true}, "wait")
	c.request("configurationDone", nil)
	c.stopped()
	c.request("continue", map[string]any{"threadId": pid})
	c.wait("program output", func(m godap.Message) bool {
		o, ok := m.(*godap.OutputEvent)
		return ok && o.Body.Category == "stdout"
	})
	c.request("pause", map[string]any{"threadId": pid})
	c.stopped()
	for _, tc := range []struct{ line, want string }{
		{"p g_origin.y", "2"},
		{"print g_origin.x + 10", "11"},
		{"p/x g_origin.y + 253", "0xff"},
		{"print/x 4096", "0x1000"},
		{"p/d 0x10", "16"},
		{"whatis g_origin", "type = struct point"},
		{"whatis &g_origin.x", "type = int *"},
		{"g_origin.y", "2"},
	} {
		if e := c.evaluate(tc.line, 0, "repl"); e.Body.Result != tc.want {
			t.Errorf("%s: %q, want %q", tc.line, e.Body.Result, tc.want)
		}
	}
	for _, tc := range []struct{ line, want string }{
		{"p/o g_origin.y", "format /o is not supported (/x, /d)"},
		{"whatis", "give an expression"},
		{"p no_such_name", `No symbol "no_such_name" in current context`},
	} {
		seq := c.send("evaluate", map[string]any{"expression": tc.line, "context": "repl"})
		if e := c.errorResponse(seq); !strings.Contains(e.Message+e.Body.Error.Format, tc.want) {
			t.Errorf("%s: %q, want an error saying %q", tc.line, e.Message+" "+e.Body.Error.Format, tc.want)
		}
	}
	c.request("disconnect", nil)
	waitGone(t, pid)
}

// TestReplPrintParse: replPrint's reading of a console line.
func TestReplPrintParse(t *testing.T) {
	for _, tc := range []struct {
		line, text  string
		hex, whatis bool
		err         bool
	}{
		{"p x", "x", false, false, false},
		{"print  a.b ", "a.b", false, false, false},
		{"p/x v", "v", true, false, false},
		{"output v", "v", false, false, false},
		{"whatis *p", "*p", false, true, false},
		{"ptype s", "s", false, true, false},
		{"pp x", "pp x", false, false, false},
		{"p+1", "p+1", false, false, false},
		{"p/t v", "", false, false, true},
		{"print", "", false, false, true},
		{"whatis/x v", "", false, false, true},
	} {
		text, hex, whatis, err := replPrint(tc.line, false)
		if (err != nil) != tc.err || text != tc.text || hex != tc.hex || whatis != tc.whatis {
			t.Errorf("replPrint(%q) = %q %v %v %v", tc.line, text, hex, whatis, err)
		}
	}
}
