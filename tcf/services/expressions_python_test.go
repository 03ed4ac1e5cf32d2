package services_test

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// pythonClientPrelude starts the Python scripts these tests run with the
// Eclipse TCF Python client: its imports, call (run a command on the
// client's dispatch thread and wait for its callback) and CB (a callback
// object answering every method with one function).
const pythonClientPrelude = `
import collections, collections.abc, json, sys, threading
if not hasattr(collections, "Callable"):  # the client predates Python 3.10
    collections.Callable = collections.abc.Callable
import tcf
from tcf import protocol

def call(start):
    ev, box = threading.Event(), {}
    def done(*args):
        box["args"] = args
        ev.set()
    protocol.invokeLater(start, done)
    if not ev.wait(10):
        raise TimeoutError("no reply")
    return box["args"]

class CB(object):
    def __init__(self, f):
        self.f = f
    def __getattr__(self, name):
        return self.f
`

// pythonLocals is run with the Eclipse TCF Python client: it lists the
// locals of a frame through Expressions.getChildren, reads each (getContext,
// evaluate, and Symbols.getContext of its symbol), evaluates expressions
// created in the frame, and prints everything as JSON.
const pythonLocals = pythonClientPrelude + `
ADDR, FRAME, EXPRS = sys.argv[1], sys.argv[2], sys.argv[3:]

protocol.startEventQueue()
ch = tcf.connect(ADDR)
ex = protocol.invokeAndWait(ch.getRemoteService, "Expressions")
sy = protocol.invokeAndWait(ch.getRemoteService, "Symbols")
out = {"locals": {}, "symbols": {}, "exprs": {}, "errors": []}
_, err, ids = call(lambda d: ex.getChildren(FRAME, CB(d)))
if err:
    out["errors"].append(str(err))
for i in ids or []:
    _, err, ctx = call(lambda d: ex.getContext(i, CB(d)))
    _, verr, val = call(lambda d: ex.evaluate(i, CB(d)))
    name = ctx.getExpression()
    out["locals"][name] = None if verr else list(val.getValue())
    sid = ctx.getSymbolID()
    if sid:
        _, serr, sym = call(lambda d: sy.getContext(sid, CB(d)))
        if not serr:
            out["symbols"][name] = {"name": sym.getName(), "type": sym.getTypeID(), "size": sym.getSize()}
for src in EXPRS:
    _, err, ctx = call(lambda d: ex.create(FRAME, None, src, CB(d)))
    if err:
        out["exprs"][src] = "error: " + str(err)
        continue
    _, verr, val = call(lambda d: ex.evaluate(ctx.getID(), CB(d)))
    out["exprs"][src] = ("error: " + str(verr)) if verr else list(val.getValue())
    call(lambda d: ex.dispose(ctx.getID(), CB(d)))
print(json.dumps(out))
protocol.invokeAndWait(ch.close)
`

// TestPythonClientReadsLocals: the Eclipse TCF Python client reads the
// locals of a frame and evaluates expressions at a breakpoint of a live
// process. It runs when TCF_PYTHON_DIR names the client's python/ directory.
func TestPythonClientReadsLocals(t *testing.T) {
	src := pythonClient(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O0"}, Name: "ex_vars_O0"})
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	la.ok("Breakpoints", "add", map[string]any{"ID": "bp", "Enabled": true, "Location": "stop_here"})
	if _, reason, _ := la.resume(thread, 0); reason != "Breakpoint" {
		t.Fatalf("stop reason %q", reason)
	}
	var e error
	var frames []string
	la.decode("StackTrace", "getChildrenRange", []any{thread, 0, 5}, &e, &frames)

	outb := runPythonClient(t, src, "locals.py", pythonLocals, "TCP:"+la.addr, frames[1], "g_arr[2][3] + a", "g_pt.y", "nosuch")
	var out struct {
		Locals  map[string][]byte
		Symbols map[string]map[string]any
		Exprs   map[string]any
		Errors  []string
	}
	if err := json.Unmarshal(outb, &out); err != nil {
		t.Fatalf("%v: %s", err, outb)
	}
	for name, want := range map[string]int64{"a": 5, "local": 10, "inner": 11, "vla_n": 7, "b": 100} {
		v, ok := out.Locals[name]
		if !ok || len(v) == 0 {
			t.Errorf("local %s missing: %v", name, out.Locals)
			continue
		}
		var w [8]byte
		copy(w[:], v)
		if got := int64(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Errorf("local %s = %d, want %d", name, got, want)
		}
		if s := out.Symbols[name]; s == nil || s["name"] != name || s["type"] == nil {
			t.Errorf("symbol of %s: %v", name, s)
		}
	}
	exprInt := func(src string) int64 {
		l, ok := out.Exprs[src].([]any)
		if !ok {
			t.Errorf("%s: %v", src, out.Exprs[src])
			return 0
		}
		var w [8]byte
		for i, x := range l {
			if i < 8 {
				w[i] = byte(x.(float64))
			}
		}
		n := int64(binary.LittleEndian.Uint64(w[:]))
		if len(l) == 4 {
			n = int64(int32(n))
		}
		return n
	}
	if v := exprInt("g_arr[2][3] + a"); v != 28 {
		t.Errorf("g_arr[2][3] + a = %d, want 28", v)
	}
	if v := exprInt("g_pt.y"); v != -4 {
		t.Errorf("g_pt.y = %d, want -4", v)
	}
	if s, _ := out.Exprs["nosuch"].(string); s == "" {
		t.Errorf("nosuch: %v, want an error", out.Exprs["nosuch"])
	}
}

// pythonClient returns the directory to put on PYTHONPATH for the Eclipse
// TCF Python client (TCF_PYTHON_DIR, its python/ directory, or the src/
// in it), or skips t when it or python3 is not there.
func pythonClient(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TCF_PYTHON_DIR")
	if dir == "" {
		t.Skip("TCF_PYTHON_DIR is not set: the Eclipse TCF Python client is needed")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	if _, err := os.Stat(filepath.Join(dir, "src", "tcf")); err == nil {
		return filepath.Join(dir, "src")
	}
	return dir
}

// runPythonClient runs the Python script text (named name) with the
// client at src on its path and args, and returns what it printed; a
// failed run fails t with its output.
func runPythonClient(t *testing.T, src, name, text string, args ...string) []byte {
	t.Helper()
	script := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("python client: %v\n%s\n%s", err, out, stderr)
	}
	return out
}
