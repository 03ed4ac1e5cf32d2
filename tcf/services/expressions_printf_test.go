package services_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/tcf"
)

// printfSession is dis_svc_prog stopped at a plain breakpoint in
// dis_step(0, "loop"), with helpers to create and evaluate expressions.
type printfSession struct {
	t              *testing.T
	la             *liveAgent
	thread, frame1 string
}

func startPrintfSession(t *testing.T) *printfSession {
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(disProg(t), nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	la.ok("Breakpoints", "add", map[string]any{"ID": "stop", "Enabled": true, "File": "dis_svc_prog.c",
		"Line": sourceLine(t, "dis_svc_prog.c", "DIS_STEP_LINE")})
	if _, reason, _ := la.resume(thread, 0); reason != "Breakpoint" {
		t.Fatalf("stop: %q", reason)
	}
	var e error
	var frames []string
	la.decode("StackTrace", "getChildrenRange", []any{thread, 0, 1}, &e, &frames)
	if len(frames) < 2 {
		t.Fatalf("frames %v %v", frames, e)
	}
	return &printfSession{t: t, la: la, thread: thread, frame1: frames[1]}
}

// create makes an expression; the error is returned, not fatal.
func (s *printfSession) create(scope, src string) (map[string]any, error) {
	s.t.Helper()
	var e error
	var props map[string]any
	if err := s.la.call("Expressions", "create", scope, nil, src).Decode(&e, &props); err != nil {
		s.t.Fatal(err)
	}
	return props, e
}

// eval creates and evaluates src in scope, failing the test on any error.
func (s *printfSession) eval(scope, src string) []byte {
	s.t.Helper()
	val, err := s.tryEval(scope, src)
	if err != nil {
		s.t.Fatalf("%s: %v", src, err)
	}
	return val
}

// tryEval creates and evaluates src, returning the first error.
func (s *printfSession) tryEval(scope, src string) ([]byte, error) {
	s.t.Helper()
	props, err := s.create(scope, src)
	if err != nil {
		return nil, err
	}
	var e error
	var val []byte
	var vprops map[string]any
	if err := s.la.call("Expressions", "evaluate", props["ID"]).Decode(&val, &e, &vprops); err != nil {
		s.t.Fatal(err)
	}
	return val, e
}

// read reads n bytes from a stream.
func (s *printfSession) read(sid string, n int) string {
	s.t.Helper()
	var got strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for got.Len() < n && time.Now().Before(deadline) {
		var data []byte
		var e error
		var lost uint64
		var eos bool
		s.la.decode("Streams", "read", []any{sid, n - got.Len()}, &data, &e, &lost, &eos)
		got.Write(data)
		if eos || lost != 0 || e != nil {
			s.t.Fatalf("read: eos %v lost %d %v after %q", eos, lost, e, got.String())
		}
	}
	return got.String()
}

// TestLiveExpressionPrintf evaluates $printf as a client's expression on a
// stopped thread: nothing is written before the client opens a DPrintf
// stream; then ints, strings (char * and literals), doubles, %x %s %c %lld
// %%, widths and precisions format as C printf does, in the scope of a
// thread, of a caller's frame and of createInScope; && decides whether the
// call happens; create and getContext do not print; the value is int 0.
func TestLiveExpressionPrintf(t *testing.T) {
	s := startPrintfSession(t)
	la := s.la

	// No stream: the call is accepted, evaluates to 0 and goes nowhere.
	if v := s.eval(s.thread, `$printf("lost %d\n", i)`); len(v) != 4 || binary.LittleEndian.Uint32(v) != 0 {
		t.Errorf("$printf without a stream = %x, want int 0", v)
	}
	var e error
	var sid string
	la.decode("DPrintf", "open", []any{nil}, &e, &sid)
	la.ok("Streams", "connect", sid)

	props, err := s.create(s.thread, `$printf("created %d\n", i)`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(props["Size"]) != "4" || fmt.Sprint(props["Class"]) != "2" || props["HasFuncCall"] != false {
		t.Errorf("create props %v: want an int (Class 2, Size 4) and no function call", props)
	}
	var sym map[string]any
	la.decode("Symbols", "getContext", []any{props["Type"]}, &e, &sym)
	if sym["Name"] != "int" || fmt.Sprint(sym["Size"]) != "4" {
		t.Errorf("type of $printf(...): %v, want int", sym)
	}
	var ctx map[string]any
	la.decode("Expressions", "getContext", []any{props["ID"]}, &e, &ctx)
	var val []byte
	var vprops map[string]any
	la.call("Expressions", "evaluate", props["ID"]).Decode(&val, &e, &vprops)
	if e != nil || len(val) != 4 || binary.LittleEndian.Uint32(val) != 0 || fmt.Sprint(vprops["Class"]) != "2" {
		t.Errorf("evaluate: %x %v %v, want int 0", val, vprops, e)
	}

	var want strings.Builder
	want.WriteString("created 0\n")
	for _, c := range []struct{ scope, src, out string }{
		{s.thread, `$printf("i=%d tag=%s name=%s ratio=%g\n", i, tag, dis_name, dis_ratio)`,
			"i=0 tag=loop name=sonde ratio=2.5\n"},
		{s.thread, `$printf("%x|%X|%#x|%c|%lld|%%|%5d|%-5d|%.2f|%8.3f|%.3s|%e|%s\n", 255, 255 + i, 4096, tag[1], 1LL << 40, i + 42, 7, dis_ratio, -dis_ratio, dis_name, dis_ratio, "lit")`,
			"ff|FF|0x1000|o|1099511627776|%|   42|7    |2.50|  -2.500|son|2.500000e+00|lit\n"},
		{s.thread, `$printf("%hhd|%hu|%lu|%o|%5.1s|%-6s|\n", 300, -1, -1L, 8, tag, tag)`,
			"44|65535|18446744073709551615|10|    l|loop  |\n"},
		{s.thread, `i == 0 && $printf("zero\n")`, "zero\n"},
		{s.thread, `i != 0 && $printf("never\n")`, ""},
		{s.thread, `$printf("a") || $printf("b\n")`, "ab\n"},
		{s.thread, `$printf("%s|%d\n", $thread, (int)sizeof($printf("no")))`, s.thread + "|4\n"},
		{s.frame1, `$printf("argc=%d n=%d\n", argc, n)`, "argc=1 n=3\n"},
	} {
		v := s.eval(c.scope, c.src)
		if len(v) != 4 || binary.LittleEndian.Uint32(v) > 1 {
			t.Errorf("%s = %x, want an int", c.src, v)
		}
		want.WriteString(c.out)
	}
	var sc map[string]any
	la.decode("Expressions", "createInScope", []any{map[string]any{"ContextID": s.thread}, `$printf("scope %d\n", i + 1)`}, &e, &sc)
	la.call("Expressions", "evaluate", sc["ID"]).Decode(&val, &e, &vprops)
	if e != nil {
		t.Errorf("createInScope: %v", e)
	}
	want.WriteString("scope 1\n")
	if got := s.read(sid, want.Len()); got != want.String() {
		t.Errorf("DPrintf stream:\n%q\nwant\n%q", got, want.String())
	}
	// Nothing more was written: the next text comes right after.
	s.eval(s.thread, `$printf("END")`)
	if got := s.read(sid, 3); got != "END" {
		t.Errorf("stream continues with %q, want END", got)
	}

	// Errors: INV_EXPRESSION for a bad call or format, INV_ADDRESS for a
	// string that cannot be read; none prints anything.
	for _, c := range []struct {
		src  string
		code int
		msg  string
	}{
		{`$printf("%d %d\n", i)`, tcf.CodeInvalidExpression, "too few arguments"},
		{`$printf("%y\n", i)`, tcf.CodeInvalidExpression, "unknown conversion"},
		{`$printf("%n", &i)`, tcf.CodeInvalidExpression, "%n is not supported"},
		{`$printf(tag)`, tcf.CodeInvalidExpression, "must be a string"},
		{`$printf`, tcf.CodeInvalidExpression, "is a function"},
		{`$printf("x"`, tcf.CodeInvalidExpression, ""},
		{`$printf("%s\n", (char *)16)`, tcf.CodeInvalidAddress, "cannot read the string at 0x10"},
		{`$printf("%s\n", nosuch)`, tcf.CodeSymbolNotFound, "nosuch"},
		{`$rax($printf("x"))`, tcf.CodeInvalidExpression, "not a function"},
	} {
		_, err := s.tryEval(s.thread, c.src)
		if err == nil || errCode(t, err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want code %d saying %q", c.src, err, c.code, c.msg)
		}
	}
	s.eval(s.thread, `$printf("after errors")`)
	if got := s.read(sid, 12); got != "after errors" {
		t.Errorf("after the errors the stream has %q", got)
	}
}

// TestLiveDollarNames checks the other $names of the C agent's expression
// language: $thread, registers (DWARF-numbered ones in any frame, with gdb's
// aliases; the others, such as $orig_rax, in the top frame only, equal to
// what the Registers service reads) and $"name".
func TestLiveDollarNames(t *testing.T) {
	s := startPrintfSession(t)
	la := s.la
	le := func(b []byte) uint64 {
		var w [8]byte
		copy(w[:], b)
		return binary.LittleEndian.Uint64(w[:])
	}
	if v := s.eval(s.thread, `$thread`); string(v) != s.thread+"\x00" {
		t.Errorf("$thread = %q, want %q", v, s.thread)
	}
	if v := s.eval(s.frame1, `$thread`); string(v) != s.thread+"\x00" {
		t.Errorf("$thread in a caller's frame = %q", v)
	}
	for _, src := range []string{`$pc == $rip`, `$sp == $rsp`, `(long)$eax == ($rax & 0xffffffff)`, `$pc != 0`} {
		if v := s.eval(s.thread, src); le(v) != 1 {
			t.Errorf("%s = %d", src, le(v))
		}
	}
	var e error
	// $orig_rax has no DWARF number: the top frame reads it as the
	// Registers service does.
	idx := -1
	for i, r := range arch.AMD64.Registers {
		if r.Name == "orig_rax" {
			idx = i
		}
	}
	var regVal []byte
	la.decode("Registers", "get", []any{"R" + strconv.Itoa(idx) + "." + s.thread}, &e, &regVal)
	if e != nil {
		t.Fatal(e)
	}
	if v := s.eval(s.thread, `$orig_rax`); le(v) != le(regVal) || len(v) != 8 {
		t.Errorf("$orig_rax = %x, Registers.get %x", v, regVal)
	}
	if _, err := s.tryEval(s.frame1, `$orig_rax`); err == nil || !strings.Contains(err.Error(), "only known in the top frame") {
		t.Errorf("$orig_rax in frame 1: %v", err)
	}
	if _, err := s.tryEval(s.thread, `$nosuchreg`); err == nil || errCode(t, err) != tcf.CodeSymbolNotFound {
		t.Errorf("$nosuchreg: %v", err)
	}
	// The C agent's names for registers sonde names as gdb does, and the
	// flags of eflags.
	for _, src := range []string{`$cwd == $fctrl`, `$swd == $fstat`, `$ftw == $ftag`, `$rdp == $fooff`,
		`$zf == (($eflags >> 6) & 1)`, `$cf == ($eflags & 1)`, `$iopl == (($eflags >> 12) & 3)`, `$if == 1`,
		`$loader_state == 0`, `$loader_brk != 0`} {
		if v := s.eval(s.thread, src); le(v) != 1 {
			t.Errorf("%s = %d", src, le(v))
		}
	}
	if v := s.eval(s.frame1, `$zf + $cf <= 2 && $cwd == $fctrl`); le(v) != 1 {
		t.Errorf("flags in frame 1: %d", le(v))
	}
	// $loader_brk is the dynamic linker's _dl_debug_state, as nm and the
	// process's mappings place it.
	if want, ok := dlDebugState(t, strings.TrimPrefix(strings.Split(s.thread, ".")[0], "P")); ok {
		if v := le(s.eval(s.thread, `$loader_brk`)); v != want {
			t.Errorf("$loader_brk = %#x, want _dl_debug_state at %#x", v, want)
		}
	}
	if v := s.eval(s.thread, `$"dis_ratio"`); math.Float64frombits(le(v)) != 2.5 {
		t.Errorf(`$"dis_ratio" = %x`, v)
	}
	if v := s.eval(s.thread, `$"i" + 5`); le(v) != 5 {
		t.Errorf(`$"i" + 5 = %d`, le(v))
	}
}

// BenchmarkLiveExpressionPrintf is one Expressions.evaluate of a created
// $printf expression on a stopped thread, over the wire: the arguments read
// from the frame (an int, a char * string, a double), the text formatted
// and written to the client's DPrintf stream.
func BenchmarkLiveExpressionPrintf(b *testing.B) {
	la := startLive(b)
	m0 := la.events.mark()
	proc, _ := la.startProcess(disProg(b), nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	la.ok("Breakpoints", "add", map[string]any{"ID": "stop", "Enabled": true, "File": "dis_svc_prog.c",
		"Line": sourceLine(b, "dis_svc_prog.c", "DIS_STEP_LINE")})
	if _, reason, _ := la.resume(thread, 0); reason != "Breakpoint" {
		b.Fatalf("stop: %q", reason)
	}
	var e error
	var sid string
	la.decode("DPrintf", "open", []any{nil}, &e, &sid)
	la.ok("Streams", "connect", sid)
	var props map[string]any
	la.decode("Expressions", "create", []any{thread, nil, `$printf("i=%d tag=%s ratio=%g\n", i, tag, dis_ratio)`}, &e, &props)
	b.ResetTimer()
	for b.Loop() {
		var val []byte
		var vprops map[string]any
		if err := la.call("Expressions", "evaluate", props["ID"]).Decode(&val, &e, &vprops); err != nil || e != nil {
			b.Fatal(err, e)
		}
	}
	b.StopTimer()
	var data []byte
	var lost uint64
	var eos bool
	la.decode("Streams", "read", []any{sid, 64}, &data, &e, &lost, &eos)
	if !strings.HasPrefix(string(data), "i=0 tag=loop ratio=2.5\n") {
		b.Fatalf("stream starts with %q", data)
	}
}

// pythonPrintf is run with the Eclipse TCF Python client: it opens a DPrintf
// stream, connects to it, creates and evaluates each expression in a scope,
// reads the stream until it holds the expected number of bytes, and prints
// the values and the text as JSON.
const pythonPrintf = pythonClientPrelude + `
ADDR, SCOPE, WANT, EXPRS = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]

protocol.startEventQueue()
ch = tcf.connect(ADDR)
ex = protocol.invokeAndWait(ch.getRemoteService, "Expressions")
dp = protocol.invokeAndWait(ch.getRemoteService, "DPrintf")
st = protocol.invokeAndWait(ch.getRemoteService, "Streams")
out = {"values": {}, "stream": "", "errors": []}
_, err, sid = call(lambda d: dp.open(CB(d)))
if err:
    out["errors"].append("open: " + str(err))
_, err = call(lambda d: st.connect(sid, CB(d)))
if err:
    out["errors"].append("connect: " + str(err))
for src in EXPRS:
    _, err, ctx = call(lambda d: ex.create(SCOPE, None, src, CB(d)))
    if err:
        out["values"][src] = "error: " + str(err)
        continue
    _, verr, val = call(lambda d: ex.evaluate(ctx.getID(), CB(d)))
    out["values"][src] = ("error: " + str(verr)) if verr else list(val.getValue())
text = b""
while len(text) < WANT:
    _, err, lost, data, eos = call(lambda d: st.read(sid, WANT - len(text), CB(d)))
    if err or eos or lost:
        out["errors"].append("read: %s eos %s lost %s" % (err, eos, lost))
        break
    text += bytes(data)
out["stream"] = text.decode()
call(lambda d: dp.close(CB(d)))
print(json.dumps(out))
protocol.invokeAndWait(ch.close)
`

// TestPythonClientPrintf: the Eclipse TCF Python client types $printf
// expressions at a breakpoint of a live process and reads their text from
// its DPrintf stream. It runs when TCF_PYTHON_DIR names the client's
// python/ directory.
func TestPythonClientPrintf(t *testing.T) {
	src := pythonClient(t)
	s := startPrintfSession(t)
	exprs := []string{`$printf("i=%d tag=%s ratio=%.1f\n", i, tag, dis_ratio)`, `i == 0 && $printf("%x|%c|%%\n", 255, tag[0])`, `$printf("%d")`}
	want := "i=0 tag=loop ratio=2.5\nff|l|%\n"
	outb := runPythonClient(t, src, "printf.py", pythonPrintf, append([]string{"TCP:" + s.la.addr, s.thread, strconv.Itoa(len(want))}, exprs...)...)
	var out struct {
		Values map[string]any
		Stream string
		Errors []string
	}
	if err := json.Unmarshal(outb, &out); err != nil {
		t.Fatalf("%v: %s", err, outb)
	}
	if len(out.Errors) != 0 || out.Stream != want {
		t.Errorf("stream %q (errors %v), want %q", out.Stream, out.Errors, want)
	}
	for _, src := range exprs[:2] {
		if v := fmt.Sprint(out.Values[src]); v != "[0 0 0 0]" {
			t.Errorf("%s = %s, want int 0", src, v)
		}
	}
	if v, _ := out.Values[exprs[2]].(string); !strings.Contains(v, "too few arguments") {
		t.Errorf("%s: %v, want an error", exprs[2], out.Values[exprs[2]])
	}
}

// dlDebugState finds _dl_debug_state in a process: the dynamic linker's
// load address from /proc/pid/maps plus the symbol's offset from nm.
func dlDebugState(t *testing.T, pid string) (uint64, bool) {
	maps, err := os.ReadFile("/proc/" + pid + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(f[5], "/ld-linux") || f[2] != "00000000" {
			continue
		}
		base, err := strconv.ParseUint(strings.Split(f[0], "-")[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("nm", "-D", f[5]).Output()
		if err != nil {
			t.Logf("nm: %v: $loader_brk not compared", err)
			return 0, false
		}
		for _, sym := range strings.Split(string(out), "\n") {
			g := strings.Fields(sym)
			if len(g) == 3 && strings.HasPrefix(g[2], "_dl_debug_state") {
				off, err := strconv.ParseUint(g[0], 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				return base + off, true
			}
		}
	}
	t.Logf("no dynamic linker with _dl_debug_state in the maps: $loader_brk not compared")
	return 0, false
}
