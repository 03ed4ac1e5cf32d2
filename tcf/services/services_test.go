package services_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/core"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
	"github.com/sondedbg/sonde/tcf/services"
)

// coreFixture is a gcore'd svc_target: a real process, frozen.
type coreFixture struct {
	exe, core  string
	pid        int
	globalAddr uint64
}

var (
	coreOnce sync.Once
	coreFix  coreFixture
	coreErr  error
)

func svcCore(t *testing.T) coreFixture {
	t.Helper()
	gdbtest.Need(t)
	coreOnce.Do(func() {
		exe, err := testprog.BuildE(testprog.Spec{Sources: []string{"svc_target.c"}, Flags: []string{"-O0"}})
		if err != nil {
			coreErr = err
			return
		}
		cmd := exec.Command(exe)
		out, _ := cmd.StdoutPipe()
		if coreErr = cmd.Start(); coreErr != nil {
			return
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			coreErr = err
			return
		}
		addr, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "ready")), "0x"), 16, 64)
		if err != nil {
			coreErr = err
			return
		}
		dir, _ := os.MkdirTemp("", "sonde-svc-core-")
		path := filepath.Join(dir, "svc.core")
		msg, err := gdbtest.Run("-p", strconv.Itoa(cmd.Process.Pid), "-ex", "gcore "+path)
		if _, serr := os.Stat(path); err != nil || serr != nil {
			coreErr = errors.New("gcore failed: " + string(msg))
			return
		}
		coreFix = coreFixture{exe: exe, core: path, pid: cmd.Process.Pid, globalAddr: addr}
	})
	if coreErr != nil {
		t.Fatal(coreErr)
	}
	return coreFix
}

// startAgent serves every service over tgt, and Diagnostics, on a loopback
// port and returns a connected client.
func startAgent(t *testing.T, tgt *target.Target) *client.Client {
	t.Helper()
	c, _ := serveAgent(t, tgt, true)
	return c
}

// serveAgent serves every service over tgt (and Diagnostics when
// diagnostics) on a loopback port and returns a connected client and the
// address; all is closed at cleanup.
func serveAgent(tb testing.TB, tgt *target.Target, diagnostics bool) (*client.Client, string) {
	tb.Helper()
	srv := tcf.NewServer(tcf.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if diagnostics {
		tcf.RegisterDiagnostics(srv)
	}
	a := services.New(srv, session.New(tgt, session.Options{}))
	a.RegisterAll()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go srv.Serve(l)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, l.Addr().String(), client.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c, l.Addr().String()
}

func call(t *testing.T, c *client.Client, service, cmd string, args ...any) *client.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Call(ctx, service, cmd, args...)
	if err != nil {
		t.Fatalf("%s.%s: %v", service, cmd, err)
	}
	return r
}

// errCode decodes a TCF error report's code (0 for none).
func errCode(t *testing.T, e error) int {
	t.Helper()
	if e == nil {
		return 0
	}
	var coder interface{ TCFCode() int }
	if errors.As(e, &coder) {
		return coder.TCFCode()
	}
	t.Fatalf("error without a code: %v", e)
	return 0
}

func openCore(t *testing.T) (coreFixture, *client.Client) {
	fx := svcCore(t)
	tgt, err := core.Open(fx.core, core.Options{Executable: fx.exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	return fx, startAgent(t, tgt)
}

func TestRunControlOverCore(t *testing.T) {
	fx, c := openCore(t)
	pid := "P" + strconv.Itoa(fx.pid)
	var rerr error
	var roots, threads []string
	if err := call(t, c, "RunControl", "getChildren", nil).Decode(&rerr, &roots); err != nil || rerr != nil {
		t.Fatal(err, rerr)
	}
	if len(roots) != 1 || roots[0] != pid {
		t.Fatalf("roots %v, want [%s]", roots, pid)
	}
	call(t, c, "RunControl", "getChildren", pid).Decode(&rerr, &threads)
	if len(threads) != 2 {
		t.Fatalf("threads %v", threads)
	}
	var props map[string]any
	call(t, c, "RunControl", "getContext", threads[0]).Decode(&rerr, &props)
	if props["ParentID"] != pid || props["HasState"] != true || props["ProcessID"] != pid {
		t.Fatalf("thread props %v", props)
	}
	var suspended bool
	var pc uint64
	var reason string
	var params map[string]any
	if err := call(t, c, "RunControl", "getState", threads[0]).Decode(&rerr, &suspended, &pc, &reason, &params); err != nil || rerr != nil {
		t.Fatal(err, rerr)
	}
	if !suspended || pc == 0 {
		t.Fatalf("state: suspended %v pc %x reason %q", suspended, pc, reason)
	}
	// A core cannot run: resume says unsupported, and the channel goes on.
	call(t, c, "RunControl", "resume", threads[0], 0, 1).Decode(&rerr)
	if errCode(t, rerr) != tcf.CodeUnsupported {
		t.Fatalf("resume on a core: %v", rerr)
	}
	// Unknown context: INV_CONTEXT, with getState's five fields.
	res := call(t, c, "RunControl", "getState", "P999999.1")
	if len(res.Fields) != 5 {
		t.Fatalf("getState error reply has %d fields", len(res.Fields))
	}
	res.Decode(&rerr, &suspended, &pc, &reason, &params)
	if errCode(t, rerr) != tcf.CodeInvalidContext {
		t.Fatalf("unknown context: %v", rerr)
	}
}

func TestMemoryRegistersStackOverCore(t *testing.T) {
	fx, c := openCore(t)
	pid := "P" + strconv.Itoa(fx.pid)
	var rerr error
	var data []byte
	var ranges any
	call(t, c, "Memory", "get", pid, fx.globalAddr, 1, 8, 0).Decode(&data, &rerr, &ranges)
	if rerr != nil || binary.LittleEndian.Uint64(data) != 0x1122334455667788 {
		t.Fatalf("global read: % x %v", data, rerr)
	}
	var bad []map[string]any
	call(t, c, "Memory", "get", pid, uint64(0x10), 1, 16, 0).Decode(&data, &rerr, &bad)
	if rerr == nil || len(bad) != 1 || len(data) != 16 {
		t.Fatalf("unmapped read: data %d bytes, err %v, ranges %v", len(data), rerr, bad)
	}
	var regions []map[string]any
	call(t, c, "MemoryMap", "get", pid).Decode(&rerr, &regions)
	found := false
	for _, r := range regions {
		found = found || r["FileName"] == fx.exe
	}
	if !found {
		t.Fatalf("memory map lacks %s: %v", fx.exe, regions)
	}

	var threads []string
	call(t, c, "RunControl", "getChildren", pid).Decode(&rerr, &threads)
	main := "P" + strconv.Itoa(fx.pid) + "." + strconv.Itoa(fx.pid)
	var regs []string
	call(t, c, "Registers", "getChildren", main).Decode(&rerr, &regs)
	var ripID string
	for _, id := range regs {
		var p map[string]any
		call(t, c, "Registers", "getContext", id).Decode(&rerr, &p)
		if p["Name"] == "rip" {
			ripID = id
			if p["Role"] != "PC" {
				t.Errorf("rip has role %v", p["Role"])
			}
		}
	}
	if ripID == "" {
		t.Fatalf("no rip among %v", regs)
	}
	var rip []byte
	call(t, c, "Registers", "get", ripID).Decode(&rerr, &rip)
	var pc uint64
	var suspended bool
	var reason string
	var params map[string]any
	call(t, c, "RunControl", "getState", main).Decode(&rerr, &suspended, &pc, &reason, &params)
	if binary.LittleEndian.Uint64(rip) != pc {
		t.Fatalf("rip %x, state pc %x", rip, pc)
	}
	var two []byte
	call(t, c, "Registers", "getm", [][]any{{ripID, 0, 4}, {ripID, 4, 4}}).Decode(&rerr, &two)
	if string(two) != string(rip) {
		t.Fatalf("getm % x, get % x", two, rip)
	}

	// The stack: bottom first from getChildren, top first from the range.
	var bottomFirst, topFirst []string
	call(t, c, "StackTrace", "getChildren", main).Decode(&rerr, &bottomFirst)
	call(t, c, "StackTrace", "getChildrenRange", main, 0, 100).Decode(&rerr, &topFirst)
	if len(bottomFirst) < 3 || len(bottomFirst) != len(topFirst) || bottomFirst[0] != topFirst[len(topFirst)-1] {
		t.Fatalf("frames %v / %v", bottomFirst, topFirst)
	}
	var frames []map[string]any
	call(t, c, "StackTrace", "getContext", topFirst).Decode(&frames, &rerr)
	if rerr != nil || len(frames) != len(topFirst) {
		t.Fatalf("frame contexts: %v %v", frames, rerr)
	}
	if num(frames[0]["IP"]) != pc {
		t.Fatalf("frame 0 IP %v, pc %x", frames[0]["IP"], pc)
	}
}

func TestFileSystemService(t *testing.T) {
	_, c := openCore(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	var rerr error
	var h string
	call(t, c, "FileSystem", "open", path, 0x1|0x2|0x8, map[string]any{"Permissions": 0o600}).Decode(&rerr, &h)
	if rerr != nil || h == "" {
		t.Fatalf("open: %v", rerr)
	}
	call(t, c, "FileSystem", "write", h, 0, []byte("hello, sonde")).Decode(&rerr)
	var data []byte
	var eof bool
	call(t, c, "FileSystem", "read", h, 7, 100).Decode(&data, &rerr, &eof)
	if string(data) != "sonde" || !eof || rerr != nil {
		t.Fatalf("read %q eof %v err %v", data, eof, rerr)
	}
	call(t, c, "FileSystem", "close", h).Decode(&rerr)
	var attrs map[string]any
	call(t, c, "FileSystem", "stat", path).Decode(&rerr, &attrs)
	if num(attrs["Size"]) != 12 {
		t.Fatalf("stat %v", attrs)
	}
	call(t, c, "FileSystem", "opendir", dir).Decode(&rerr, &h)
	var entries []map[string]any
	call(t, c, "FileSystem", "readdir", h).Decode(&entries, &rerr, &eof)
	if len(entries) != 1 || entries[0]["FileName"] != "f.txt" {
		t.Fatalf("readdir %v", entries)
	}
	call(t, c, "FileSystem", "remove", path).Decode(&rerr)
	call(t, c, "FileSystem", "stat", path).Decode(&rerr, &attrs)
	if errCode(t, rerr) != 0x10002 {
		t.Fatalf("stat of a removed file: %v", rerr)
	}
	// user() has five fields and no error field.
	res := call(t, c, "FileSystem", "user")
	if len(res.Fields) != 5 {
		t.Fatalf("user: %d fields", len(res.Fields))
	}
	call(t, c, "FileSystem", "read", "FH-none", 0, 1).Decode(&data, &rerr, &eof)
	if errCode(t, rerr) != tcf.CodeInvalidContext {
		t.Fatalf("read of an unknown handle: %v", rerr)
	}
}

func TestPathMapSysMonitorContextQuery(t *testing.T) {
	fx, c := openCore(t)
	var rerr error
	rules := []map[string]any{{"ID": "r1", "Source": "/build/src", "Destination": "/home/u/src"}}
	call(t, c, "PathMap", "set", rules).Decode(&rerr)
	var got []map[string]any
	call(t, c, "PathMap", "get").Decode(&rerr, &got)
	if len(got) != 1 || got[0]["Destination"] != "/home/u/src" {
		t.Fatalf("pathmap %v", got)
	}
	self := "P" + strconv.Itoa(os.Getpid())
	var props map[string]any
	call(t, c, "SysMonitor", "getContext", self).Decode(&rerr, &props)
	if rerr != nil || props["PPID"] == nil || props["Exe"] == nil {
		t.Fatalf("sysmonitor %v %v", props, rerr)
	}
	var argv []string
	call(t, c, "SysMonitor", "getCommandLine", self).Decode(&rerr, &argv)
	if len(argv) == 0 || argv[0] != os.Args[0] {
		t.Fatalf("command line %v", argv)
	}
	var ids []string
	call(t, c, "ContextQuery", "query", "pid="+strconv.Itoa(fx.pid)+"/*").Decode(&rerr, &ids)
	if len(ids) != 2 || !strings.HasPrefix(ids[0], "P"+strconv.Itoa(fx.pid)+".") {
		t.Fatalf("query threads: %v", ids)
	}
	call(t, c, "ContextQuery", "query", "**").Decode(&rerr, &ids)
	if len(ids) != 3 {
		t.Fatalf("query all: %v", ids)
	}
}

func TestTerminalsAndStreams(t *testing.T) {
	_, c := openCore(t)
	var rerr error
	call(t, c, "Streams", "subscribe", "Terminals").Decode(&rerr)
	var term map[string]any
	call(t, c, "Terminals", "launch", "xterm", "UTF-8", []string{"PATH=/usr/bin:/bin", "PS1=$ "}).Decode(&rerr, &term)
	if rerr != nil {
		t.Fatal(rerr)
	}
	in, out := term["StdInID"].(string), term["StdOutID"].(string)
	call(t, c, "Streams", "write", in, 23, []byte("echo sonde-$((40+2))\nexit\n")).Decode(&rerr)
	var all strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(all.String(), "sonde-42") {
		var data []byte
		var lost int
		var eos bool
		call(t, c, "Streams", "read", out, 4096).Decode(&data, &rerr, &lost, &eos)
		all.Write(data)
		if eos {
			break
		}
	}
	if !strings.Contains(all.String(), "sonde-42") {
		t.Fatalf("terminal output %q", all.String())
	}
}

// num reads a JSON number the client decoded (exactly, as json.Number).
func num(v any) uint64 {
	switch n := v.(type) {
	case interface{ String() string }:
		u, _ := strconv.ParseUint(n.String(), 10, 64)
		return u
	case float64:
		return uint64(n)
	}
	return 0
}

func TestSymbolsAndLineNumbersOverCore(t *testing.T) {
	fx, c := openCore(t)
	main := "P" + strconv.Itoa(fx.pid) + "." + strconv.Itoa(fx.pid)
	var rerr error
	var frames []string
	call(t, c, "StackTrace", "getChildrenRange", main, 0, 100).Decode(&rerr, &frames)
	var props []map[string]any
	call(t, c, "StackTrace", "getContext", frames).Decode(&props, &rerr)
	// Name every frame the way clients do: findByAddr at IP (IP-1 for callers),
	// then getContext; lines with mapToSource.
	var names []string
	var lines []int
	for i, p := range props {
		ip := num(p["IP"])
		if i > 0 {
			ip--
		}
		var sym string
		call(t, c, "Symbols", "findByAddr", frames[i], ip).Decode(&rerr, &sym)
		var sp map[string]any
		if sym != "" {
			call(t, c, "Symbols", "getContext", sym).Decode(&rerr, &sp)
		}
		name, _ := sp["Name"].(string)
		names = append(names, name)
		var areas []map[string]any
		call(t, c, "LineNumbers", "mapToSource", frames[i], ip, ip+1).Decode(&rerr, &areas)
		line := 0
		for _, a := range areas {
			if a["File"] == "svc_target.c" {
				line = int(num(a["SLine"]))
			}
		}
		lines = append(lines, line)
	}
	joined := strings.Join(names, " ")
	if !strings.Contains(joined, "wait_here main") {
		t.Fatalf("frame names %q", joined)
	}
	for i, n := range names {
		if n == "wait_here" && lines[i] != 21 {
			t.Errorf("wait_here at line %d, want 21", lines[i])
		}
		if n == "main" && lines[i] != 28 {
			t.Errorf("main at line %d, want 28", lines[i])
		}
	}
	// By name: the global and the function.
	var ids []string
	call(t, c, "Symbols", "findByName", main, nil, "svc_global").Decode(&rerr, &ids)
	if len(ids) != 1 {
		t.Fatalf("svc_global: %v %v", ids, rerr)
	}
	var vp map[string]any
	call(t, c, "Symbols", "getContext", ids[0]).Decode(&rerr, &vp)
	if num(vp["Address"]) != fx.globalAddr {
		t.Fatalf("svc_global at %v, want %x", vp["Address"], fx.globalAddr)
	}
	call(t, c, "Symbols", "findByName", main, nil, "no_such_symbol").Decode(&rerr, &ids)
	if errCode(t, rerr) != tcf.CodeSymbolNotFound {
		t.Fatalf("unknown name: %v", rerr)
	}
	// mapToMemory: line 20 (`for (;;)`) has no code of its own; gdb moves to 21.
	var areas []map[string]any
	call(t, c, "LineNumbers", "mapToMemory", main, "svc_target.c", 20, 0).Decode(&rerr, &areas)
	if len(areas) == 0 || num(areas[0]["SLine"]) != 21 {
		t.Fatalf("mapToMemory: %v %v", areas, rerr)
	}
}
