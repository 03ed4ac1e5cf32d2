package dap

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestFunctionValuesMatchGDB: a function named in a watch or hover is
// printed as gdb prints it, with its parameter list ({int (int, int)}
// 0x401126 <add>, found in the sixth real-program trial: sonde printed
// {int (void)} for every function, its lookup by name giving only an
// address); function pointers, in variables and members, as gdb's
// (binop) 0x401126 <add>. C, C++ (members, static members, namespaces) and
// Rust, each against gdb (rust-gdb's language for Rust) at the same stop.
func TestFunctionValuesMatchGDB(t *testing.T) {
	gdbtest.Need(t)
	for _, tc := range []struct {
		name, src, stop string
		build           func(t *testing.T) string
		exprs           []string
		whatis          []string // compared with gdb's whatis as the evaluate response's type
	}{
		{"c", "dap_fnptr.c", "apply", func(t *testing.T) string {
			return testprog.Build(t, testprog.Spec{Sources: []string{"dap_fnptr.c"}, Flags: []string{"-O0", "-no-pie"}, Name: "dap_fnptr"})
		}, []string{"add", "avg", "noargs", "say", "apply", "main", "f", "o->fn", "o->log", "o->mean", "&add", "*f", "*o",
			// C's comparisons and logical operators are ints (1, 0).
			"x < y", "x > y", "!f", "x && !y", "f == add"}, []string{"*o", "o->log", "x < y"}},
		{"cxx", "dap_fnptr.cc", "apply", func(t *testing.T) string {
			return testprog.Build(t, testprog.Spec{Sources: []string{"dap_fnptr.cc"}, Flags: []string{"-O0", "-no-pie"}, Name: "dap_fnptr_cc"})
		}, []string{"add", "geo::scale", "Counter::bump", "Counter::peek", "Counter::make", "f", "c->cb", "&add", "*f", "pm", "ps",
			// C++11 enumerators named through their enum (an enum
			// class's only so), in conditions and watches; C++'s
			// comparisons are bools (true, false).
			"Mode::On", "c->mode == Mode::Auto", "c->mode != Mode::Auto", "(int)Mode::Auto", "geo::Unit::Mega", "c->unit == geo::Unit::Kilo",
			"!c->cb", "!f || x", "(int)(c->mode == Mode::Auto)"},
			[]string{"*c", "c->unit", "pm", "c->mode != Mode::Auto", "!f"}},
		{"rust", "dap_fnptr.rs", "dap_fnptr::apply", func(t *testing.T) string {
			return testprog.BuildRust(t, "dap_fnptr.rs", "dap_fnptr", "-C", "opt-level=0", "-C", "relocation-model=static", "-C", "link-args=-no-pie")
		}, []string{"dap_fnptr::add", "dap_fnptr::shout", "dap_fnptr::Counter::bump", "f", "ops.fun",
			// Rust's comparisons are bools; its ! on an integer the
			// bitwise complement.
			"x < 2", "x == 3 && x > 0", "!(x < 2)", "!x"},
			// Rust types as rust-gdb's whatis: no C "struct".
			[]string{"*ops", "ops.name", "ops.fun", "f", "x < 2", "!x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := tc.build(t)
			line := markerLine(t, tc.src, "stop")
			var cmds []string
			for _, e := range tc.exprs {
				cmds = append(cmds, "print "+e)
			}
			for _, e := range tc.whatis {
				cmds = append(cmds, "whatis "+e)
			}
			gdb := gdbPrints(t, prog, tc.src, line, cmds)
			c := newClient(t)
			c.launch(prog, nil)
			c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source(tc.src)},
				"breakpoints": []map[string]any{{"line": line}}})
			c.request("configurationDone", nil)
			st := c.stopped()
			frames := c.stack(st.Body.ThreadId)
			for i, e := range tc.whatis {
				want := strings.TrimPrefix(gdb[len(tc.exprs)+i], "type = ")
				if r := c.evaluate(e, frames[0].Id, "watch").Body; r.Type != want {
					t.Errorf("type of %s: sonde %q, gdb's whatis %q", e, r.Type, want)
				}
			}
			for i, e := range tc.exprs {
				r := c.evaluate(e, frames[0].Id, "watch").Body
				want, wantType := gdb[i], ""
				// gdb's print puts a pointer's type before it,
				// "(binop) 0x401126 <add>"; a DAP value is the rest, its
				// type the evaluate response's type.
				if m := pointerPrefix.FindStringSubmatch(want); m != nil {
					want, wantType = want[len(m[1])+3:], m[1]
				}
				if r.Result != want {
					t.Errorf("%s: sonde %q, gdb %q", e, r.Result, gdb[i])
				}
				if wantType != "" && r.Type != wantType {
					t.Errorf("%s: sonde's type %q, gdb's %q", e, r.Type, wantType)
				}
			}
			c.request("disconnect", nil)
		})
	}
}

// pointerPrefix is gdb's "(type) " before a pointer's value.
var pointerPrefix = regexp.MustCompile(`^\((.*)\) (0x[0-9a-f]+|NULL)`)

// gdbPrints runs prog under gdb to src:line and returns what each print
// command printed, without its "$N = ".
func gdbPrints(t *testing.T, prog, src string, line int, prints []string) []string {
	t.Helper()
	args := []string{"-ex", "set print demangle on", "-ex", fmt.Sprintf("break %s:%d", src, line), "-ex", "run"}
	for _, p := range prints {
		args = append(args, "-ex", "echo @@\\n", "-ex", p)
	}
	out := gdbtest.Batch(t, append(args, prog)...)
	parts := strings.Split(out, "@@\n")
	if len(parts) != len(prints)+1 {
		t.Fatalf("gdb's output: %s", out)
	}
	re := regexp.MustCompile(`^(\$\d+ = |type = )`)
	var res []string
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if i := strings.Index(p, "\n[Inferior"); i >= 0 {
			p = p[:i]
		}
		if !re.MatchString(p) {
			t.Fatalf("gdb printed %q", p)
		}
		if strings.HasPrefix(p, "type = ") {
			res = append(res, p)
			continue
		}
		res = append(res, re.ReplaceAllString(p, ""))
	}
	return res
}
