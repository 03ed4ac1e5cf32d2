package services_test

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// TestLiveMemory: get/set/fill on a live process; planted breakpoints are
// hidden from reads and survive writes; a range that is partly unmapped gives
// the readable bytes and an error range for the rest.
func TestLiveMemory(t *testing.T) {
	la := startLive(t)
	proc, thread := la.stoppedAtMain("loop", "2")
	pid := pidOf(proc)
	pc, _, _ := func() (uint64, string, map[string]any) {
		var e error
		var s bool
		var pc uint64
		la.decode("RunControl", "getState", []any{thread}, &e, &s, &pc, nil, nil)
		return pc, "", nil
	}()
	addrOf := func(name string) uint64 {
		var e error
		var id string
		la.decode("Symbols", "find", []any{thread, pc, name}, &e, &id)
		var props map[string]any
		la.decode("Symbols", "getContext", []any{id}, &e, &props)
		return num(props["Address"])
	}
	buf := addrOf("agent_buf")
	var data []byte
	var e error
	var ranges []map[string]any

	// fill, then get.
	la.decode("Memory", "fill", []any{proc, buf, 1, 7, 0, []int{1, 2, 3}}, &e, &ranges)
	la.decode("Memory", "get", []any{proc, buf, 1, 9, 0}, &data, &e, &ranges)
	if string(data) != "\x01\x02\x03\x01\x02\x03\x01ge" {
		t.Errorf("after fill: %q", data)
	}
	// set with verify, through a thread ID too (clients use either).
	la.decode("Memory", "set", []any{proc, buf, 1, 5, 2, base64.StdEncoding.EncodeToString([]byte("SONDE"))}, &e, &ranges)
	la.decode("Memory", "get", []any{thread, buf, 1, 5, 0}, &data, &e, &ranges)
	if string(data) != "SONDE" {
		t.Errorf("after set: %q", data)
	}

	// A breakpoint is invisible to reads, and a write over it keeps it.
	m := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "b", "Location": "hit"})
	inst, _ := la.statusOf(m, "b")
	hit := num(inst[0]["Address"])
	la.decode("Memory", "get", []any{proc, hit - 2, 1, 5, 0}, &data, &e, &ranges)
	orig := slices.Clone(data)
	if orig[2] == 0xcc {
		t.Fatalf("read shows the breakpoint: %x", orig)
	}
	patched := slices.Clone(orig)
	patched[2] ^= 0xff
	la.decode("Memory", "set", []any{proc, hit - 2, 1, 5, 0, base64.StdEncoding.EncodeToString(patched)}, &e, &ranges)
	la.decode("Memory", "get", []any{proc, hit - 2, 1, 5, 0}, &data, &e, &ranges)
	if !slices.Equal(data, patched) || codeByte(t, pid, hit) != 0xcc {
		t.Errorf("write over a breakpoint: read %x (wrote %x), byte in memory %#x", data, patched, codeByte(t, pid, hit))
	}
	la.decode("Memory", "set", []any{proc, hit - 2, 1, 5, 0, base64.StdEncoding.EncodeToString(orig)}, &e, &ranges)
	la.ok("Breakpoints", "remove", []string{"b"})
	if codeByte(t, pid, hit) != orig[2] {
		t.Errorf("after remove: %#x, want the original %#x", codeByte(t, pid, hit), orig[2])
	}

	// Unmapped: zero data, an error, one range with stat invalid|cannot read.
	r := la.call("Memory", "get", proc, uint64(0x10), 1, 16, 0)
	if err := r.Decode(&data, &e, &ranges); err != nil {
		t.Fatal(err)
	}
	if e == nil || len(data) != 16 || len(ranges) != 1 || num(ranges[0]["addr"]) != 0x10 || num(ranges[0]["size"]) != 16 || num(ranges[0]["stat"]) != 6 {
		t.Errorf("unmapped read: %v %x %v", e, data, ranges)
	}
	// Partly mapped: the end of a mapping followed by a hole.
	end := mappingEndBeforeHole(t, pid)
	r = la.call("Memory", "get", proc, end-8, 1, 16, 1)
	if err := r.Decode(&data, &e, &ranges); err != nil {
		t.Fatal(err)
	}
	if e == nil || len(ranges) != 1 || num(ranges[0]["addr"]) != end || num(ranges[0]["size"]) != 8 {
		t.Errorf("partly mapped read at 0x%x: %v %v", end-8, e, ranges)
	}
	direct := make([]byte, 8)
	f, _ := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	f.ReadAt(direct, int64(end-8))
	f.Close()
	if !slices.Equal(data[:8], direct) {
		t.Errorf("readable part %x, /proc says %x", data[:8], direct)
	}
	// Unknown context, too large a request: error replies.
	la.call("Memory", "get", "P999999999", buf, 1, 4, 0).Decode(&data, &e, &ranges)
	if errCode(t, e) != 16 {
		t.Errorf("unknown context: %v", e)
	}
	la.call("Memory", "get", proc, buf, 1, 1<<30, 0).Decode(&data, &e, &ranges)
	if errCode(t, e) == 0 {
		t.Errorf("1 GiB read accepted")
	}
	la.ok("RunControl", "resume", thread, 0, 1)
}

// mappingEndBeforeHole finds the end of a mapping that no mapping follows.
func mappingEndBeforeHole(t *testing.T, pid int) uint64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var starts, ends []uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lo, hi, _ := strings.Cut(strings.Fields(sc.Text())[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		b, _ := strconv.ParseUint(hi, 16, 64)
		starts, ends = append(starts, a), append(ends, b)
	}
	for _, e := range ends {
		if !slices.Contains(starts, e) && e < 1<<47 {
			return e
		}
	}
	t.Fatal("no mapping followed by a hole")
	return 0
}

// TestLiveRegisters: get/set/getm/setm on a stopped thread.
func TestLiveRegisters(t *testing.T) {
	la := startLive(t)
	_, thread := la.stoppedAtMain()
	var e error
	var ids []string
	la.decode("Registers", "getChildren", []any{thread}, &e, &ids)
	byName := map[string]string{}
	for _, id := range ids {
		var p map[string]any
		la.decode("Registers", "getContext", []any{id}, &e, &p)
		name, _ := p["Name"].(string)
		byName[name] = id
	}
	for _, n := range []string{"rax", "rbx", "rip", "rsp", "r15", "eflags"} {
		if byName[n] == "" {
			t.Fatalf("no register %s among %v", n, byName)
		}
	}
	get := func(n string) uint64 {
		var v []byte
		la.decode("Registers", "get", []any{byName[n]}, &e, &v)
		return binary.LittleEndian.Uint64(v)
	}
	set := func(n string, v uint64) {
		la.ok("Registers", "set", byName[n], base64.StdEncoding.EncodeToString(binary.LittleEndian.AppendUint64(nil, v)))
	}
	r15 := get("r15")
	set("r15", 0x1122334455667788)
	if got := get("r15"); got != 0x1122334455667788 {
		t.Errorf("r15 after set: %#x", got)
	}
	var v []byte
	la.decode("Registers", "getm", []any{[][]any{{byName["r15"], 0, 8}, {byName["rip"], 0, 8}, {byName["r15"], 2, 2}}}, &e, &v)
	if len(v) != 18 || binary.LittleEndian.Uint64(v) != 0x1122334455667788 || binary.LittleEndian.Uint16(v[16:]) != 0x5566 {
		t.Errorf("getm %x", v)
	}
	var state bool
	var pc uint64
	la.decode("RunControl", "getState", []any{thread}, &e, &state, &pc, nil, nil)
	if binary.LittleEndian.Uint64(v[8:]) != pc {
		t.Errorf("getm rip %x, state pc %x", v[8:16], pc)
	}
	val := binary.LittleEndian.AppendUint64(nil, r15)
	val = append(val, 0xaa, 0xbb)
	la.ok("Registers", "setm", [][]any{{byName["r15"], 0, 8}, {byName["r14"], 0, 2}}, base64.StdEncoding.EncodeToString(val))
	if got := get("r15"); got != r15 {
		t.Errorf("r15 after setm %#x, want %#x", got, r15)
	}
	if got := get("r14") & 0xffff; got != 0xbbaa {
		t.Errorf("r14 low bytes after setm %#x", got)
	}
	// The program still runs to its end with the registers it needs intact.
	m := la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	la.exitCode(m, thread[:strings.IndexByte(thread, '.')])
	// A register of an exited thread: an error reply.
	la.call("Registers", "get", byName["rax"]).Decode(&e, &v)
	if errCode(t, e) == 0 {
		t.Errorf("register of an exited thread read")
	}
}

// TestLiveStackTraceMatchesGdb: a 57-frame stack (bottom, 55 deep, main)
// with names and lines from StackTrace + Symbols + LineNumbers, compared
// with gdb's backtrace of the same program at the same place.
func TestLiveStackTraceMatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	prog := agentProg(t)
	out := gdbtest.Batch(t, "-ex", "break bottom", "-ex", "run", "-ex", "bt",
		"--args", prog, "deep", "55")
	re := regexp.MustCompile(`(?m)^#(\d+) +(?:0x[0-9a-f]+ in )?(\S+) \(.*\) at (\S+):(\d+)$`)
	var want []string
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		want = append(want, fmt.Sprintf("%s %s:%s", m[2], m[3][strings.LastIndexByte(m[3], '/')+1:], m[4]))
	}
	la := startLive(t)
	_, thread := la.stoppedAtMain("deep", "55")
	la.ok("Breakpoints", "add", map[string]any{"ID": "b", "Location": "bottom", "SkipPrologue": false})
	// At bottom's entry; gdb stops after its prologue, on the same line
	// (bottom is one line), so the frames compare.
	la.resume(thread, 0)
	var e error
	var ids []string
	la.decode("StackTrace", "getChildrenRange", []any{thread, 0, 200}, &e, &ids)
	var frames []map[string]any
	la.decode("StackTrace", "getContext", []any{ids}, &frames, &e)
	var got []string
	for i, f := range frames {
		ip := num(f["IP"])
		if i > 0 {
			ip--
		}
		file, line := la.lineAt(thread, ip)
		if file == "" {
			break // past the program's own frames (gdb's list ends there too)
		}
		got = append(got, fmt.Sprintf("%s %s:%d", la.funcAt(thread, ip), file[strings.LastIndexByte(file, '/')+1:], line))
	}
	if len(got) < 57 {
		t.Errorf("%d frames with lines, want at least 57", len(got))
	}
	n := min(len(got), len(want))
	if n < 57 || !slices.Equal(got[:n], want[:n]) {
		t.Errorf("stack differs from gdb's:\nsonde %v\ngdb   %v", got, want)
	}
	la.ok("RunControl", "resume", thread, 0, 1)
}
