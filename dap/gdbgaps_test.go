package dap

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// gdbRefPrefix is gdb print's "(T &) " before a reference's "@0x...: ":
// a DAP value is the rest, its type the response's type.
var gdbRefPrefix = regexp.MustCompile(`^\(([^()]*&&?)\) (@0x[0-9a-f]+.*)$`)

// gdbVectorElements is what gdb's vector printer adds to the summary a DAP
// value shows (its elements are the value's children).
var gdbVectorElements = regexp.MustCompile(`(std::vector of length \d+), capacity \d+ = \{.*\}$`)

// TestCxxBoolsAndRefsMatchGDB: a C++ comparison or logical operation is a
// bool, printed true/false as gdb prints it (C's stay 1/0), in watches,
// hovers, the repl and log points; a reference named by a watch prints as
// gdb's print shows it, "@0x7ffe...: 5" typed "int &", as the variables
// view shows the same reference (found in the sixth real-program trial:
// sonde printed 1 for a C++ comparison and a reference's referent without
// its address). Every value against gdb's print at the same stop (gdb run
// without a shell, as sonde launches, so stack addresses are the same).
func TestCxxBoolsAndRefsMatchGDB(t *testing.T) {
	gdbtest.Need(t)
	prog := buildGaps(t)
	const src = "dap_gdbgaps.cc"
	line := markerLine(t, src, "stop")
	exprs := []string{"a < b", "a == 5 && b", "!p", "!a", "flag", "s.count > 2 || p", "(a<b)==(b<a)", "(a<b)+1", "-(a<b)",
		"ra", "s", "acc", "label", "vals", "rv", "s.limit", "ra+1", "(ra)", "*&ra", "&ra", "s.count", "s.name"}
	var cmds []string
	for _, e := range exprs {
		cmds = append(cmds, "print "+e)
	}
	cmds = append(cmds, "info locals", "info args", "print/x ra", "whatis ra", "whatis a < b")
	gdb := gdbNoShellPrints(t, prog, src, line, cmds)
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source(src)},
		"breakpoints": []map[string]any{{"line": markerLine(t, src, "log"), "logMessage": "{a < b} {!p} {ra} {s.limit} {label}"}, {"line": line}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	// A log point prints bools as the watches do, and a reference as its
	// referent, as a printf of it would.
	if got, want := c.output("console"), "false true 5 7 \"gamma\"\n"; !strings.Contains(got, want) {
		t.Errorf("log point: console %q, want %q", got, want)
	}
	frames := c.stack(st.Body.ThreadId)
	for i, e := range exprs {
		want, wantType := gdbVectorElements.ReplaceAllString(gdb[i], "$1"), ""
		if m := gdbRefPrefix.FindStringSubmatch(want); m != nil {
			wantType, want = m[1], m[2]
		}
		if m := pointerPrefix.FindStringSubmatch(want); m != nil {
			want, wantType = want[len(m[1])+3:], m[1]
		}
		for _, ctx := range []string{"watch", "hover", "repl"} {
			r := c.evaluate(e, frames[0].Id, ctx).Body
			if r.Result != want {
				t.Errorf("%s %s: sonde %q, gdb %q", ctx, e, r.Result, gdb[i])
			}
			if wantType != "" && r.Type != wantType {
				t.Errorf("%s %s: sonde's type %q, gdb's %q", ctx, e, r.Type, wantType)
			}
		}
	}
	// The debug console's print/x and whatis, as gdb's.
	for k, cmd := range []string{"p/x ra", "whatis ra", "whatis a < b"} {
		want := gdb[len(exprs)+2+k]
		if m := gdbRefPrefix.FindStringSubmatch(want); m != nil {
			want = m[2]
		}
		if r := c.evaluate(cmd, frames[0].Id, "repl").Body; r.Result != want {
			t.Errorf("repl %s: sonde %q, gdb %q", cmd, r.Result, gdb[len(exprs)+2+k])
		}
	}
	// The variables view: gdb's info locals and info args.
	ss := c.scopes(frames[0].Id)
	for k, scope := range []string{"Locals", "Arguments"} {
		vs := c.vars(scopeByName(t, ss, scope).VariablesReference, nil)
		for _, l := range strings.Split(gdb[len(exprs)+k], "\n") {
			name, want, ok := strings.Cut(l, " = ")
			if !ok {
				continue
			}
			want = gdbVectorElements.ReplaceAllString(want, "$1")
			if v := varByName(t, vs, name); v.Value != want {
				t.Errorf("%s %s: sonde %q, gdb %q", scope, name, v.Value, want)
			}
		}
	}
	// A reference member under its struct: as gdb's print s.limit.
	sv := varByName(t, c.vars(scopeByName(t, ss, "Arguments").VariablesReference, nil), "s")
	limit := varByName(t, c.vars(sv.VariablesReference, nil), "limit")
	if want := gdb[gapsIndex(exprs, "s.limit")]; "("+limit.Type+") "+limit.Value != want {
		t.Errorf("s's member limit: sonde (%s) %s, gdb %s", limit.Type, limit.Value, want)
	}
	c.request("disconnect", nil)
}

func buildGaps(t *testing.T) string {
	return testprog.Build(t, testprog.Spec{Sources: []string{"dap_gdbgaps.cc", "dap_gdbgaps_base.cc"}, Flags: []string{"-O0"}, Name: "dap_gdbgaps"})
}

// TestBaseDeclaredInAnotherUnit: a member of a base class the unit only
// declares (GCC describes a class with a key function only in the unit
// that defines the function) is found by name in a method of the derived
// class, and the base prints in *this, as gdb finds and prints them
// (found in the seventh real-program trial: pugixml's
// xml_tree_walker::_depth was "No symbol" in a walker's for_each, and
// *this showed <pugi::xml_tree_walker> = <optimized out>).
func TestBaseDeclaredInAnotherUnit(t *testing.T) {
	gdbtest.Need(t)
	prog := buildGaps(t)
	const src = "dap_gdbgaps.cc"
	line := markerLine(t, src, "visit")
	exprs := []string{"depth", "this->depth", "*this", "seen > depth", "(*this).depth + seen"}
	var cmds []string
	for _, e := range exprs {
		cmds = append(cmds, "print "+e)
	}
	gdb := gdbNoShellPrints(t, prog, src, line, cmds)
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source(src)},
		"breakpoints": []map[string]any{{"line": line}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	frames := c.stack(st.Body.ThreadId)
	for i, e := range exprs {
		if r := c.evaluate(e, frames[0].Id, "watch").Body; r.Result != gdb[i] {
			t.Errorf("%s: sonde %q, gdb %q", e, r.Result, gdb[i])
		}
	}
	// The variables view: this expands to its base, the base to depth.
	this := varByName(t, c.vars(scopeByName(t, c.scopes(frames[0].Id), "Arguments").VariablesReference, nil), "this")
	base := varByName(t, c.vars(this.VariablesReference, nil), "Walker")
	if d := varByName(t, c.vars(base.VariablesReference, nil), "depth"); d.Value != "2" {
		t.Errorf("this -> Walker -> depth: %+v", d)
	}
	c.request("disconnect", nil)
}

func gapsIndex(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// gdbNoShellPrints is gdbPrints with the program started as sonde starts
// it: no shell, no LINES and COLUMNS in its environment, so that its stack
// is where it is under sonde. "info" commands' output is returned whole.
func gdbNoShellPrints(t *testing.T, prog, src string, line int, cmds []string) []string {
	t.Helper()
	args := []string{"-ex", "set startup-with-shell off", "-ex", "unset environment LINES", "-ex", "unset environment COLUMNS",
		"-ex", fmt.Sprintf("break %s:%d", src, line), "-ex", "run"}
	for _, p := range cmds {
		args = append(args, "-ex", "echo @@\\n", "-ex", p)
	}
	out := gdbtest.Batch(t, append(args, prog)...)
	parts := strings.Split(out, "@@\n")
	if len(parts) != len(cmds)+1 {
		t.Fatalf("gdb's output: %s", out)
	}
	re := regexp.MustCompile(`^\$\d+ = `)
	var res []string
	for i, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if j := strings.Index(p, "\n[Inferior"); j >= 0 {
			p = p[:j]
		}
		if strings.HasPrefix(cmds[i], "info ") || strings.HasPrefix(cmds[i], "whatis ") {
			res = append(res, p)
			continue
		}
		if !re.MatchString(p) {
			t.Fatalf("gdb printed %q for %s", p, cmds[i])
		}
		res = append(res, re.ReplaceAllString(p, ""))
	}
	return res
}
