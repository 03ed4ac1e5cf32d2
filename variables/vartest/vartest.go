// Package vartest helps tests of the variables, expr and TCF Expressions
// layers compare sonde with gdb at the same stop: it runs a test program
// under gdb to a breakpoint, records what gdb prints for a list of
// expressions in chosen frames, and writes a core file at that stop for
// sonde to open (a real, frozen process).
package vartest

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/core"
	"github.com/sondedbg/sonde/variables"
)

// Result is what gdb said about one expression.
type Result struct {
	// Value is gdb's print output ("{x = 3, y = -4}", "<optimized out>").
	Value string `json:"value"`
	// Int is set for integer, enum, bool, char and pointer values.
	Int *int64 `json:"int,omitempty"`
	// Uint is the same integer read as unsigned.
	Uint *uint64 `json:"uint,omitempty"`
	// Float is set for floating values.
	Float *float64 `json:"float,omitempty"`
	// Error is gdb's error message when it could not evaluate the expression.
	Error string `json:"error,omitempty"`
	// OptimizedOut is set when gdb says the value is optimized out.
	OptimizedOut bool `json:"optimized_out,omitempty"`
	// Type is gdb's name for the expression's type.
	Type string `json:"type,omitempty"`
}

// Stop is a program stopped at a breakpoint, seen by gdb and saved as a core.
type Stop struct {
	Exe, Core string
	// Results[frame][expression] is gdb's answer in that frame.
	Results map[int]map[string]Result
}

// evalScript defines evaluate(exprs): gdb's answers, with types and values,
// for expressions in the selected frame. The drivers below call it.
const evalScript = `
import gdb, json

def evaluate(exprs):
    res = {}
    for e in exprs:
        r = {}
        try:
            v = gdb.parse_and_eval(e)
            r["type"] = str(v.type)
            if v.is_optimized_out:
                r["optimized_out"] = True
                r["value"] = "<optimized out>"
            else:
                r["value"] = v.format_string()
                t = v.type.strip_typedefs()
                if t.code in (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_ENUM, gdb.TYPE_CODE_BOOL, gdb.TYPE_CODE_CHAR, gdb.TYPE_CODE_PTR):
                    n = int(v)
                    r["int"] = n if n < 2**63 else n - 2**64
                    r["uint"] = n % 2**64
                elif t.code == gdb.TYPE_CODE_FLT:
                    r["float"] = float(v)
        except gdb.error as x:
            r["error"] = str(x)
            if "optimized out" in str(x):
                r["optimized_out"] = True
        res[e] = r
    return res
`

const script = evalScript + `
out = {}
for frame, exprs in REQUESTS:
    gdb.execute("frame %d" % frame, to_string=True)
    out[frame] = evaluate(exprs)
with open(OUTPUT, "w") as f:
    json.dump(out, f)
`

// GDBStop runs exe under gdb until the first hit of a breakpoint at
// location, evaluates exprs[frame] in each frame, and writes a core. It
// skips the test when gdb is missing.
func GDBStop(t testing.TB, exe, location string, exprs map[int][]string) *Stop {
	t.Helper()
	return GDBStopWith(t, exe, location, exprs, nil)
}

// GDBStopWith is GDBStop with gdb commands run first (to load printers:
// rust-gdb's, say).
func GDBStopWith(t testing.TB, exe, location string, exprs map[int][]string, setup []string) *Stop {
	t.Helper()
	gdbtest.Need(t)
	var reqs []string
	for f, es := range exprs {
		q, _ := json.Marshal(es)
		reqs = append(reqs, fmt.Sprintf("(%d, %s)", f, q))
	}
	py := strings.Replace(script, "REQUESTS", "["+strings.Join(reqs, ", ")+"]", 1)
	// Frames past main (libc's) are shown too: sonde unwinds into them.
	results, corePath := runGDB(t, py, exe, nil, location, append(setup, "set backtrace past-main on"), []string{"frame 0"})
	return &Stop{Exe: exe, Core: corePath, Results: results}
}

// runGDB runs exe (with args) under gdb to the first hit of a breakpoint at
// location, sources the evaluation script py (its OUTPUT is replaced by the
// results file), runs the after commands, writes a core and returns the
// results, keyed by the integer (frame or thread) the script used, and the
// core's path. before are settings given ahead of the breakpoint.
func runGDB(t testing.TB, py, exe string, args []string, location string, before, after []string) (map[int]map[string]Result, string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "gdb.json")
	py = strings.Replace(py, "OUTPUT", fmt.Sprintf("%q", out), 1)
	pyPath := filepath.Join(dir, "eval.py")
	if err := os.WriteFile(pyPath, []byte(py), 0o644); err != nil {
		t.Fatal(err)
	}
	corePath := filepath.Join(dir, "stop.core")
	cmdArgs := []string{"-ex", "set pagination off", "-ex", "set print pretty off"}
	for _, c := range before {
		cmdArgs = append(cmdArgs, "-ex", c)
	}
	cmdArgs = append(cmdArgs, "-ex", "break "+location, "-ex", "run", "-ex", "source "+pyPath)
	for _, c := range after {
		cmdArgs = append(cmdArgs, "-ex", c)
	}
	cmdArgs = append(cmdArgs, "-ex", "gcore "+corePath, "-ex", "kill", "--args", exe)
	msg, err := gdbtest.Run(append(cmdArgs, args...)...)
	if _, serr := os.Stat(corePath); err != nil || serr != nil {
		t.Fatalf("gdb failed (%v): %s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("gdb wrote no results: %v\n%s", err, msg)
	}
	var raw map[string]map[string]Result
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	results := map[int]map[string]Result{}
	for k, v := range raw {
		var n int
		fmt.Sscan(k, &n)
		results[n] = v
	}
	return results, corePath
}

// Open opens the stop's core and returns its target and the thread that hit
// the breakpoint (the first thread).
func (s *Stop) Open(t testing.TB) (*target.Target, *target.Context) {
	t.Helper()
	tgt, err := core.Open(s.Core, core.Options{Executable: s.Exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	for _, p := range tgt.Processes() {
		for _, th := range p.Children() {
			return tgt, th
		}
	}
	t.Fatal("core has no thread")
	return nil, nil
}

// Frame opens the stop's core, walks the stack of the thread that hit the
// breakpoint and returns frame level with its variables reader: what a test
// comparing values with gdb's at that stop starts from.
func (s *Stop) Frame(t testing.TB, level int) (*session.Frame, *variables.Reader) {
	t.Helper()
	_, th := s.Open(t)
	st, err := Stack(th)
	if err != nil {
		t.Fatal(err)
	}
	f := st.Frame(level)
	r, err := f.Reader()
	if err != nil {
		t.Fatal(err)
	}
	return f, r
}

// Stack walks the stack of th (stopped) through a new session of its
// target: its frames carry their registers, modules and symbol readers.
func Stack(th *target.Context) (*session.Stack, error) {
	return session.New(th.Target(), session.Options{}).Stack(th, session.StackOptions{})
}

// LinkDWO makes the .dwo files of a split-DWARF build of exe (which
// testprog moved next to it) visible where its skeleton units say they are
// (DW_AT_comp_dir joined with DW_AT_dwo_name or DW_AT_GNU_dwo_name, a build
// directory that is gone), because gdb looks only there; sonde also looks
// next to the binary. The links are removed when the test ends, or
// earlier by calling unlink.
func LinkDWO(t testing.TB, exe string) (unlink func()) {
	t.Helper()
	names, err := dwoNames(exe)
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	unlink = func() {
		for _, l := range links {
			os.Remove(l)
			os.Remove(filepath.Dir(l)) // only when empty: another build's links may share it
		}
		links = nil
	}
	t.Cleanup(unlink)
	for _, name := range names {
		if _, err := os.Stat(name); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(filepath.Dir(exe), filepath.Base(name)), name); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		links = append(links, name)
	}
	return unlink
}

// ThreadStop is a multi-threaded program stopped at a breakpoint, seen by
// gdb in every thread and saved as a core.
type ThreadStop struct {
	Exe, Core string
	// Results[tid][expression] is gdb's answer in frame 0 of thread tid.
	Results map[int]map[string]Result
}

const threadScript = evalScript + `
out = {}
for th in gdb.selected_inferior().threads():
    th.switch()
    gdb.execute("frame 0", to_string=True)
    out[th.ptid[1]] = evaluate(EXPRS)
with open(OUTPUT, "w") as f:
    json.dump(out, f)
`

// GDBStopThreads runs exe with args under gdb until the first hit of a
// breakpoint at location, evaluates exprs in frame 0 of every thread, and
// writes a core. It skips the test when gdb is missing.
func GDBStopThreads(t testing.TB, exe string, args []string, location string, exprs []string) *ThreadStop {
	t.Helper()
	gdbtest.Need(t)
	q, _ := json.Marshal(exprs)
	py := strings.Replace(threadScript, "EXPRS", string(q), 1)
	results, corePath := runGDB(t, py, exe, args, location, nil, nil)
	return &ThreadStop{Exe: exe, Core: corePath, Results: results}
}

// Open opens the stop's core and returns its target and threads.
func (s *ThreadStop) Open(t testing.TB) (*target.Target, []*target.Context) {
	t.Helper()
	tgt, err := core.Open(s.Core, core.Options{Executable: s.Exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	var out []*target.Context
	for _, p := range tgt.Processes() {
		out = append(out, p.Children()...)
	}
	if len(out) == 0 {
		t.Fatal("core has no thread")
	}
	return tgt, out
}

// dwoNames returns where exe's skeleton units say their .dwo files are:
// DW_AT_dwo_name (DW_AT_GNU_dwo_name in DWARF 4) joined with
// DW_AT_comp_dir, read with sonde's own DWARF reader.
func dwoNames(exe string) ([]string, error) {
	ef, err := elf.Open(exe)
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	sec := func(name string) []byte {
		s := ef.Section(name)
		if s == nil {
			return nil
		}
		b, _ := s.Data()
		return b
	}
	info, abbrev := sec(".debug_info"), sec(".debug_abbrev")
	units, err := dwarf.ReadUnits(".debug_info", info, false)
	if err != nil {
		return nil, err
	}
	strs := unitStrings{secs: map[dwarf.StrSection][]byte{dwarf.StrUnit: info, dwarf.StrStr: sec(".debug_str"),
		dwarf.StrLineStr: sec(".debug_line_str"), dwarf.StrOffsets: sec(".debug_str_offsets")}}
	var names []string
	for i := range units {
		u := &units[i]
		ab, err := dwarf.ParseAbbrevs(".debug_abbrev", abbrev, u.AbbrevOff)
		if err != nil {
			return nil, err
		}
		var e dwarf.Entry
		if err := dwarf.NewUnitReader(".debug_info", info, u, ab).Next(&e); err != nil {
			return nil, err
		}
		strs.u, strs.base = u, dwarf.UnitBases(u, &e).StrOffsets
		name, err := strs.of(e.Field(dwarf.AttrDwoName))
		if err == nil && name == "" {
			name, err = strs.of(e.Field(dwarf.AttrGNUDwoName))
		}
		if err != nil {
			return nil, fmt.Errorf("unit at %#x: %w", u.Offset, err)
		}
		if name == "" {
			continue
		}
		if !filepath.IsAbs(name) {
			dir, err := strs.of(e.Field(dwarf.AttrCompDir))
			if err != nil {
				return nil, fmt.Errorf("unit at %#x: %w", u.Offset, err)
			}
			name = filepath.Join(dir, name)
		}
		names = append(names, name)
	}
	return names, nil
}

// unitStrings resolves a unit DIE's string attributes (every string form
// a skeleton unit uses).
type unitStrings struct {
	secs map[dwarf.StrSection][]byte
	u    *dwarf.Unit
	base uint64 // the unit's DW_AT_str_offsets_base
}

// of returns the string f holds ("" for no attribute).
func (s *unitStrings) of(f *dwarf.Field) (string, error) {
	if f == nil {
		return "", nil
	}
	return dwarf.String(f, s.u, ".debug_info", s.base, func(sec dwarf.StrSection) []byte { return s.secs[sec] })
}
