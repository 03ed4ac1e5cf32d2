package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

type traceReport struct {
	Probes []traceRow `json:"probes"`
}

func buildPrCount(t *testing.T, pie bool) string {
	t.Helper()
	if pie {
		return testprog.Build(t, testprog.Spec{Sources: []string{"pr_count.c"}, Flags: []string{"-O2"}, Name: "pr_count_pie"})
	}
	return testprog.Build(t, testprog.Spec{Sources: []string{"pr_count.c"}, Flags: []string{"-O2", "-no-pie", "-fno-pie"}, Name: "pr_count_nopie"})
}

// splitTraceOutput separates the program's own output (first) from sonde's
// JSON report (last) on the shared stdout.
func splitTraceOutput(t *testing.T, out []byte) (prog string, rep traceReport) {
	t.Helper()
	i := bytes.Index(out, []byte("{\n"))
	if i < 0 {
		t.Fatalf("no JSON report in %q", out)
	}
	if err := json.Unmarshal(out[i:], &rep); err != nil {
		t.Fatalf("report %q: %v", out[i:], err)
	}
	return string(out[:i]), rep
}

func rowOf(t *testing.T, rep traceReport, loc string) traceRow {
	t.Helper()
	for _, r := range rep.Probes {
		if r.Location == loc {
			return r
		}
	}
	t.Fatalf("no row for %s in %+v", loc, rep)
	return traceRow{}
}

func untracedOutput(t *testing.T, path string, args ...string) string {
	t.Helper()
	out, _ := exec.Command(path, args...).Output()
	return string(out)
}

// TestTraceCountLaunch: `sonde trace --count --json -- PROG` counts 10 million
// calls exactly with a jump probe, PIE and non-PIE; the program keeps sonde's
// stdout and prints what it prints untraced.
func TestTraceCountLaunch(t *testing.T) {
	sonde := testprog.Sonde(t)
	for _, pie := range []bool{true, false} {
		t.Run(fmt.Sprintf("pie=%v", pie), func(t *testing.T) {
			path := buildPrCount(t, pie)
			const n = 10_000_000
			cmd := exec.Command(sonde, "trace", "--count", "--json", "--probe", "hot", "--probe", "ripload", "--", path, fmt.Sprint(n))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %v\n%s", cmd.Args, err, stderr.Bytes())
			}
			prog, rep := splitTraceOutput(t, out)
			if want := untracedOutput(t, path, fmt.Sprint(n)); prog != want {
				t.Errorf("program output %q, untraced %q", prog, want)
			}
			for _, loc := range []string{"hot", "ripload"} {
				r := rowOf(t, rep, loc)
				if r.Kind != "probe" || r.Hits != n || r.Fallback != "" || !strings.HasPrefix(r.Address, "0x") {
					t.Errorf("%s: %+v, want a probe with %d hits", loc, r, n)
				}
			}
		})
	}
}

// TestTraceFallbackAndBreak: sites that cannot be patched are breakpoints that
// say why; --break is a breakpoint; file:line and asm labels resolve; all
// count exactly.
func TestTraceFallbackAndBreak(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := buildPrCount(t, true)
	const n = 300
	out, err := exec.Command(sonde, "trace", "--json", "--probe", "tiny", "--probe", "bt_start", "--probe", "bt_label",
		"--break", "leaf2", "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	_, rep := splitTraceOutput(t, out)
	for _, c := range []struct {
		loc, kind, why string
		hits           uint64
	}{
		{"tiny", "breakpoint", "does not fit", n},
		{"bt_start", "breakpoint", "inside the patched range", n},
		{"bt_label", "probe", "", 3 * n}, // dec; jnz (re-encoded) inside bt_start
		{"leaf2", "breakpoint", "", n},
	} {
		r := rowOf(t, rep, c.loc)
		if r.Kind != c.kind || r.Hits != c.hits || !strings.Contains(r.Fallback, c.why) || (c.why == "") != (r.Fallback == "") {
			t.Errorf("%s: %+v; want kind %s, %d hits, fallback with %q", c.loc, r, c.kind, c.hits, c.why)
		}
	}
}

// TestTraceExitFromSignalHandler: the counts are printed when the program
// ends with _exit from a signal handler.
func TestTraceExitFromSignalHandler(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := buildPrCount(t, true)
	const n = 100_000
	cmd := exec.Command(sonde, "trace", "--json", "--probe", "hot", "--", path, fmt.Sprint(n), "_exit")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.Bytes())
	}
	_, rep := splitTraceOutput(t, out)
	if r := rowOf(t, rep, "hot"); r.Kind != "probe" || r.Hits != n {
		t.Errorf("hot: %+v, want %d hits", r, n)
	}
	if !strings.Contains(stderr.String(), "exited with code 3") {
		t.Errorf("stderr %q does not tell the exit code", stderr.String())
	}
}

// startForever starts pr_count untraced with a loop that outlasts the test.
func startForever(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(path, "1000000000000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// checkDetached checks that the process runs on untraced with its text
// byte-identical to the file and no code cache left (no anonymous rwx
// mapping).
func checkDetached(t *testing.T, pid int, path string) {
	t.Helper()
	mem, file := testprog.MappedText(t, pid, path)
	if !bytes.Equal(mem, file) {
		t.Error("text differs from the file after the trace")
	}
	maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if bytes.Contains(maps, []byte(" rwxp 00000000 00:00 0 ")) {
		t.Errorf("a code cache is left:\n%s", maps)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if !bytes.Contains(status, []byte("TracerPid:\t0\n")) || bytes.Contains(status, []byte("State:\tZ")) {
		t.Errorf("process after the trace:\n%s", status)
	}
}

// TestTraceAttachDuration: -p PID --duration traces a running process for a
// while, then removes every probe, frees the cache, detaches and exits 0.
func TestTraceAttachDuration(t *testing.T) {
	sonde := testprog.Sonde(t)
	for _, pie := range []bool{true, false} {
		t.Run(fmt.Sprintf("pie=%v", pie), func(t *testing.T) {
			path := buildPrCount(t, pie)
			prog := startForever(t, path)
			time.Sleep(50 * time.Millisecond)
			// A breakpoint where a probe is too: either may go first, the
			// bytes come back right.
			out, err := exec.Command(sonde, "trace", "-p", fmt.Sprint(prog.Process.Pid), "--probe", "hot", "--probe", "ripload",
				"--probe", "withcall", "--break", "ripload", "--duration", "300ms", "--json").Output()
			if err != nil {
				t.Fatal(err)
			}
			var rep traceReport
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatalf("%q: %v", out, err)
			}
			for _, loc := range []string{"hot", "ripload", "withcall"} {
				if r := rowOf(t, rep, loc); r.Kind != "probe" || r.Hits == 0 {
					t.Errorf("%s: %+v", loc, r)
				}
			}
			checkDetached(t, prog.Process.Pid, path)
		})
	}
}

// TestTraceSIGINT: SIGINT to sonde ends a -p trace like --duration does.
func TestTraceSIGINT(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := buildPrCount(t, true)
	prog := startForever(t, path)
	cmd := exec.Command(sonde, "trace", "-p", fmt.Sprint(prog.Process.Pid), "--probe", "hot")
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the probe is in: its cache shows in the memory map.
	deadline := time.Now().Add(20 * time.Second)
	for {
		maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", prog.Process.Pid))
		if bytes.Contains(maps, []byte(" rwxp 00000000 00:00 0 ")) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no code cache after 20 s; stderr %s", stderr.Bytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sonde trace after SIGINT: %v\n%s", err, stderr.Bytes())
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "LOCATION") || !strings.Contains(lines[1], "hot") || strings.HasSuffix(lines[1], " 0") {
		t.Errorf("report %q", lines)
	}
	checkDetached(t, prog.Process.Pid, path)
}

// TestTraceLatency: --latency times every call that returns (the calls an
// exception leaves are not timed, and the exception reaches its handler);
// the program's results are the untraced ones.
func TestTraceLatency(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"pr_latency.cc"}, Flags: []string{"-O2"}})
	const n = 3000
	out, err := exec.Command(sonde, "trace", "--latency", "--json", "--probe", "work", "--probe", "through", "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	prog, rep := splitTraceOutput(t, out)
	if want := untracedOutput(t, path, fmt.Sprint(n)); prog != want {
		t.Errorf("program output %q, untraced %q", prog, want)
	}
	for loc, timed := range map[string]uint64{"work": n, "through": n - n/3} {
		r := rowOf(t, rep, loc)
		if r.Kind != "probe" || r.Hits != n || r.Latency == nil || r.Latency.Timed != timed || len(r.Latency.Buckets) == 0 {
			t.Errorf("%s: %+v (latency %+v); want %d calls, %d timed", loc, r, r.Latency, n, timed)
			continue
		}
		for _, b := range r.Latency.Buckets {
			if b.HiNS <= b.LoNS || b.Count == 0 {
				t.Errorf("%s: bucket %+v", loc, b)
			}
		}
	}
}

// TestTraceArgs: --args prints every hit with its first argument register
// (hot(i) for i = 0..n-1), as text and as JSON lines.
func TestTraceArgs(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := buildPrCount(t, false)
	const n = 5
	out, err := exec.Command(sonde, "trace", "--args", "--probe", "hot", "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "hot [") {
			hits = append(hits, l)
		}
	}
	if len(hits) != n {
		t.Fatalf("%d hit lines, want %d:\n%s", len(hits), n, out)
	}
	for i, l := range hits {
		if !strings.Contains(l, fmt.Sprintf("] (%#x, ", i)) {
			t.Errorf("hit %d: %q, want rdi = %#x", i, l, i)
		}
	}
	out, err = exec.Command(sonde, "trace", "--args", "--json", "--probe", "hot", "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, l := range strings.Split(string(out), "\n") {
		var h struct {
			Hit  string   `json:"hit"`
			Args []string `json:"args"`
		}
		if json.Unmarshal([]byte(l), &h) == nil && h.Hit == "hot" {
			if len(h.Args) != 6 || h.Args[0] != fmt.Sprintf("%#x", k) {
				t.Errorf("JSON hit %d: %q", k, l)
			}
			k++
		}
	}
	if k != n {
		t.Errorf("%d JSON hit lines, want %d:\n%s", k, n, out)
	}
	_, rep := splitTraceOutput(t, out)
	if r := rowOf(t, rep, "hot"); r.Hits != n || r.Kind != "probe" || r.Fallback != "" {
		t.Errorf("hot: %+v, want a recording probe", r)
	}
}

// TestTraceArgsRing: --args on a hot loop of 200,000 calls, far more than
// the ring holds and sonde drains between two looks: every hit is printed
// (in order, with the thread's ID) or counted as lost, never both, never
// neither.
func TestTraceArgsRing(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := buildPrCount(t, true)
	const n = 200_000
	cmd := exec.Command(sonde, "trace", "--args", "--json", "--probe", "hot", "--", path, fmt.Sprint(n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	printed, prev, tid := 0, int64(-1), -1
	for _, l := range strings.Split(string(out), "\n") {
		var h struct {
			Hit  string   `json:"hit"`
			TID  int      `json:"tid"`
			Args []string `json:"args"`
		}
		if json.Unmarshal([]byte(l), &h) != nil || h.Hit != "hot" {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimPrefix(h.Args[0], "0x"), 16, 64)
		if err != nil || v <= prev || v >= n {
			t.Fatalf("hit after rdi %d: %q", prev, l)
		}
		if tid == -1 {
			tid = h.TID
		}
		if h.TID <= 0 || h.TID != tid {
			t.Fatalf("hit %q: tid %d, the program's one thread is %d", l, h.TID, tid)
		}
		prev = v
		printed++
	}
	_, rep := splitTraceOutput(t, out)
	r := rowOf(t, rep, "hot")
	if r.Kind != "probe" || r.Hits != n || uint64(printed)+r.Lost != n {
		t.Fatalf("hot: %+v; %d printed + %d lost, want %d", r, printed, r.Lost, n)
	}
	if r.Lost > 0 && !strings.Contains(stderr.String(), "hits lost") {
		t.Errorf("%d lost, and stderr does not say so:\n%s", r.Lost, stderr.String())
	}
	t.Logf("%d hits: %d printed, %d lost", n, printed, r.Lost)
}

// TestTraceIf: --if compiled into the probe counts only where it holds (an
// argument, a global); with --args only those hits are printed.
func TestTraceIf(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := buildPrCount(t, true)
	const n = 10000
	out, err := exec.Command(sonde, "trace", "--json", "--if", "arg0 < 10", "--probe", "hot", "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	_, rep := splitTraceOutput(t, out)
	if r := rowOf(t, rep, "hot"); r.Kind != "probe" || r.Hits != 10 {
		t.Errorf("hot if arg0 < 10: %+v, want a probe with 10 hits", r)
	}
	out, err = exec.Command(sonde, "trace", "--json", "--if", "gvar != 7", "--probe", "ripload", "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	_, rep = splitTraceOutput(t, out)
	if r := rowOf(t, rep, "ripload"); r.Kind != "probe" || r.Hits != 0 {
		t.Errorf("ripload if gvar != 7: %+v, want a probe with 0 hits", r)
	}
	out, err = exec.Command(sonde, "trace", "--args", "--if", "arg0 >= 9997", "--probe", "hot", "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "hot ["); got != 3 || !strings.Contains(string(out), "] (0x270f, ") {
		t.Errorf("--args --if printed %d hits:\n%s", got, out)
	}
	if code := exec.Command(sonde, "trace", "--if", "arg0 ~ 3", "--probe", "hot", "--", path).Run(); code == nil {
		t.Error("a bad --if was accepted")
	}
}

// TestTraceLibrary: a probe in libc (resolved once the program reached main
// and its libraries are loaded; the code cache goes next to libc) counts and
// times every call.
func TestTraceLibrary(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := buildPrCount(t, true)
	const n = 2000
	out, err := exec.Command(sonde, "trace", "--latency", "--json", "--probe", "snprintf", "--", path, fmt.Sprint(n), "lib").Output()
	if err != nil {
		t.Fatal(err)
	}
	prog, rep := splitTraceOutput(t, out)
	if want := untracedOutput(t, path, fmt.Sprint(n), "lib"); prog != want {
		t.Errorf("program output %q, untraced %q", prog, want)
	}
	r := rowOf(t, rep, "snprintf")
	if r.Hits != n {
		t.Errorf("snprintf: %+v, want %d hits", r, n)
	}
	if r.Kind == "probe" && r.Latency != nil && r.Latency.Timed != n {
		t.Errorf("snprintf: %d timed, want %d", r.Latency.Timed, n)
	}
	if r.Kind != "probe" {
		t.Logf("snprintf is a breakpoint on this libc: %s", r.Fallback)
	}
}

// TestTraceLibraryNames: --probe getpid and --probe strlen count the code
// the program's calls run: libc's getpid, not the dynamic linker's private
// copy (the only one there at the entry), and the implementation libc's
// strlen resolver chose, not the resolver. One row each, every call counted.
func TestTraceLibraryNames(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"tr_libcalls.c"}, Flags: []string{"-O2"}})
	const n = 2000
	out, err := exec.Command(sonde, "trace", "--json", "--probe", "getpid", "--probe", "strlen", "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	_, rep := splitTraceOutput(t, out)
	if len(rep.Probes) != 2 {
		t.Fatalf("%d rows, want one per name: %+v", len(rep.Probes), rep)
	}
	for _, loc := range []string{"getpid", "strlen"} {
		if r := rowOf(t, rep, loc); r.Hits != n {
			t.Errorf("%s: %+v, want %d hits", loc, r, n)
		}
	}
}
