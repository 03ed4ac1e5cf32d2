package profiling

// Regressions found on the second set of real programs
// (bench/perf/REAL-PROGRAMS.md, "second set"): each records a program the
// way a profiler user does and compares with perf's reading.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestFramePointerAfterCallThroughMemory: a function without CFI called
// with `call *(%reg)` (ld.so's _dl_call_fini calling crtstuff's
// __do_global_dtors_aux at every exit; found in `sh -c 'true; ls ...'`)
// unwinds through its frame pointer to its caller, as perf does: the
// return address's check knew `call *%reg` but not `call *(%reg)`.
func TestFramePointerAfterCallThroughMemory(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_nocfi.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "300")
	want := perfScript(t, out, "--no-inline")
	got, _ := sondeSamples(t, out, Options{NoInline: true})
	var c tally
	toMain := 0
	for _, w := range want {
		g := got[w.key]
		if !slices.Contains(g.names, "nocfi") {
			continue
		}
		if slices.Contains(g.names, "main") {
			toMain++
		}
		c.add(strings.Join(g.names, ";") == strings.Join(w.names, ";"), func() string {
			return w.key + ":\n  sonde " + strings.Join(g.names, ";") + "\n  perf  " + strings.Join(w.names, ";")
		})
	}
	c.log(t, "samples through nocfi as perf script's")
	t.Logf("%d reach main", toMain)
	if !c.atLeast(95) || toMain < c.n*95/100 {
		t.Errorf("%d samples through nocfi: %d reach main, %d as perf's", c.n, toMain, c.same)
	}
}

// goPingPong is a Go program whose one P passes a value between two
// goroutines for MS milliseconds: samples in the scheduler, on g0's stack,
// in time.now's switch to g0 for the vDSO, and at start-up under rt0_go.
const goPingPong = `package main

import (
	"os"
	"runtime"
	"strconv"
	"time"
)

func main() {
	ms, _ := strconv.Atoi(os.Args[1])
	runtime.GOMAXPROCS(1)
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
	}()
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	for n := 0; time.Now().Before(end); n++ {
		ping <- n
		<-pong
	}
}
`

// buildGo builds a one-file Go program (static, with .debug_frame and
// frame pointers, no .eh_frame) in a temporary directory.
func buildGo(t *testing.T, src string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("SKIP (machine): no go command to build a Go program")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module gotarget\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "gotarget")
	cmd := exec.Command(goBin, "build", "-o", prog, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return prog
}

// TestGoStacksEndAtTheirRoots: a Go program recorded with --call-graph
// dwarf unwinds with its .debug_frame (perf's unwinder shows only the
// sampled pc), and no walk shows a word that is not a return address as a
// frame: rt0_go's CFI reads argc as its return address, time.now's does
// not follow its switch to g0's stack. Such stacks end at rt0_go and
// time.now (Go's own tracebacks end at rt0_go too), not in an [unknown]
// frame outside every mapping.
func TestGoStacksEndAtTheirRoots(t *testing.T) {
	testprog.RequirePerf(t)
	prog := buildGo(t, goPingPong)
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "300")
	want := perfScript(t, out, "--no-inline")
	firstUser := map[string]string{}
	for _, w := range want {
		for i, m := range w.mods {
			if m != "[kernel.kallsyms]" {
				firstUser[w.key] = w.names[i]
				break
			}
		}
	}
	got, rec := sondeSamples(t, out, Options{NoInline: true})
	if int(rec.Samples) != len(want) {
		t.Errorf("%d samples, perf script prints %d", rec.Samples, len(want))
	}
	stray, rooted, deep, sameFirst, withUser := 0, 0, 0, 0, 0
	var bad []string
	for _, w := range want {
		g := got[w.key]
		var user []string
		for i, m := range g.mods {
			switch {
			case m == "[kernel.kallsyms]":
			case m == "":
				stray++
				if len(bad) < 5 {
					bad = append(bad, w.key+": "+strings.Join(g.names, ";"))
				}
				user = append(user, g.names[i])
			default:
				user = append(user, g.names[i])
			}
		}
		if len(user) == 0 {
			continue
		}
		withUser++
		if user[0] == firstUser[w.key] {
			sameFirst++
		}
		if len(user) > 1 {
			deep++
		}
		if i := slices.Index(user, "runtime.rt0_go.abi0"); i >= 0 {
			if i == len(user)-1 {
				rooted++
			} else if len(bad) < 5 {
				bad = append(bad, w.key+" goes on after rt0_go: "+strings.Join(user, ";"))
			}
		}
	}
	t.Logf("%d samples with user frames: %d with perf's first frame, %d unwound past it; %d end at rt0_go; %d frames in no mapping", withUser, sameFirst, deep, rooted, stray)
	for _, b := range bad {
		t.Log(b)
	}
	if stray > 0 || len(bad) > 0 {
		t.Errorf("%d frames outside every mapping, %d stacks going on after rt0_go", stray, len(bad))
	}
	if withUser == 0 || sameFirst < withUser*99/100 || deep < withUser*9/10 {
		t.Errorf("of %d samples, %d have perf's first user frame, %d were unwound past it", withUser, sameFirst, deep)
	}
}

// perfReportRows runs perf report with --sort comm,dso,sym (mode
// --children or --no-children) and returns its first n rows as
// "comm dso sym" and the first column's percentage.
func perfReportRows(t *testing.T, path, mode string, n int) ([]string, []string) {
	out, err := exec.Command("perf", "report", "-i", path, mode, "--no-inline", "-g", "none", "--stdio", "--sort", "comm,dso,sym").Output()
	if err != nil {
		t.Fatalf("perf report %s: %v", mode, err)
	}
	var rows, pcts []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || strings.HasPrefix(f[0], "#") || !strings.HasSuffix(f[0], "%") {
			continue
		}
		if mode == "--children" {
			f = append(f[:1], f[2:]...) // drop the self column
		}
		// pct comm dso [.] sym
		sym := strings.Join(f[4:], " ")
		if at := strings.IndexByte(sym, '@'); at > 0 {
			sym = sym[:at] // __libc_start_main@@GLIBC_2.34
		}
		rows = append(rows, f[1]+" "+f[2]+" "+sym)
		pcts = append(pcts, f[0])
		if len(rows) == n {
			break
		}
	}
	return rows, pcts
}

// TestReportMatchesPerfReport: sonde perf report's rows carry perf
// report's self (--no-children) and total (--children) percentages, and a
// leaf that is hot in itself is listed even when more than top callers
// rank above it by total (make -j2's cc1 lost native_set_pte, 1.41% self,
// under fifty callers). Modules are named as perf names them.
func TestReportMatchesPerfReport(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "300")
	rec, err := OpenRecording(out, Options{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	r := NewReport()
	if err := rec.Each(func(s *Sample) error { r.Add(s); return nil }); err != nil {
		t.Fatal(err)
	}
	// Four rows by total are the program's outer frames (_start,
	// __libc_start_main, __libc_start_call_main, main): the leaf that
	// burns the CPU is listed for its self.
	var b bytes.Buffer
	if err := r.WriteTo(&b, 4); err != nil {
		t.Fatal(err)
	}
	self, total := map[string]string{}, map[string]string{}
	for _, l := range strings.Split(b.String(), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || strings.HasPrefix(f[0], "#") {
			continue
		}
		k := f[2] + " " + f[3] + " " + strings.Join(f[4:], " ")
		total[k], self[k] = f[0], f[1]
	}
	t.Logf("sonde perf report:\n%s", b.String())
	rows, pcts := perfReportRows(t, out, "--no-children", 2)
	for i, k := range rows {
		if unnamedRow(k) {
			// perf could not name this code (the vDSO, when it finds no copy
			// of it with symbols) and gives every address a row; sonde
			// lumps the module's unnamed code into one [unknown] row.
			t.Logf("perf report --no-children: %s %s: not compared (no name)", pcts[i], k)
			continue
		}
		if self[k] != pcts[i] {
			t.Errorf("perf report --no-children: %s %s; sonde's self: %q", pcts[i], k, self[k])
		}
	}
	rows, pcts = perfReportRows(t, out, "--children", 3)
	for i, k := range rows {
		if unnamedRow(k) {
			continue
		}
		var p, q float64
		fmt.Sscanf(pcts[i], "%f%%", &p)
		if _, err := fmt.Sscanf(total[k], "%f%%", &q); err != nil || q < p-1 || q > p+1 {
			t.Errorf("perf report --children: %s %s; sonde's total: %q", pcts[i], k, total[k])
		}
	}
}

// unnamedRow reports whether a perf report row ("comm module symbol") names
// its code by a bare address: perf found no symbol for it.
func unnamedRow(k string) bool {
	f := strings.Fields(k)
	return len(f) > 0 && strings.HasPrefix(f[len(f)-1], "0x")
}

// TestPprofBuildIDsMatchPerf: every file perf's build-id table lists (the
// files a sample's pc was in) is a mapping of sonde's pprof profile with
// the same build-id; the files seen only as callers get theirs from the
// file (perf's table has none for them).
func TestPprofBuildIDsMatchPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "200", "fork")
	ids, err := exec.Command("perf", "buildid-list", "--with-hits", "-i", out).Output()
	if err != nil {
		t.Fatalf("perf buildid-list: %v", err)
	}
	rec, err := OpenRecording(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	pp := NewPprof()
	if err := rec.Each(func(s *Sample) error { pp.Add(s); return nil }); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := pp.Write(&b, rec); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range p.Mapping {
		got[m.File] = m.BuildID
		if strings.HasPrefix(m.File, "/") && m.BuildID == "" {
			t.Errorf("mapping %s has no build-id", m.File)
		}
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(string(ids)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 || f[1] == "[vdso]" && got[f[1]] == "" {
			continue
		}
		n++
		if got[f[1]] != f[0] {
			t.Errorf("perf buildid-list: %s %s; sonde's pprof mapping: %q", f[0], f[1], got[f[1]])
		}
	}
	t.Logf("%d build-ids of perf buildid-list --with-hits, %d mappings", n, len(p.Mapping))
	if n < 3 {
		t.Errorf("perf buildid-list --with-hits lists %d files:\n%s", n, ids)
	}
}

// TestFramesInADeletedFile: a program that removed its own file while it
// ran (perf could not read it, nor cache it) has its frames shown as perf
// shows them: [unknown] in that file, the sampled pc of a kernel sample
// included; and a walk that returns into it from a library (_start, from
// __libc_start_main) keeps that frame.
func TestFramesInADeletedFile(t *testing.T) {
	testprog.RequirePerf(t)
	built := testprog.Build(t, testprog.Spec{Sources: []string{"perf_nocfi.c"}, Flags: []string{"-O2", "-g"}})
	dir := t.TempDir()
	prog := filepath.Join(dir, "selfdel")
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, data, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "300", "unlink")
	if _, err := os.Stat(prog); err == nil {
		t.Fatalf("%s did not remove itself", prog)
	}
	want := perfScript(t, out, "--no-inline")
	got, _ := sondeSamples(t, out, Options{NoInline: true})
	var c tally
	for _, w := range want {
		if !slices.Contains(w.mods, prog) {
			continue
		}
		g := got[w.key]
		c.add(slices.Equal(g.names, w.names) && slices.Equal(g.mods, w.mods), func() string {
			return fmt.Sprintf("%s:\n  sonde %q %q\n  perf  %q %q", w.key, g.names, g.mods, w.names, w.mods)
		})
	}
	c.log(t, "of perf's samples with a frame in the deleted file alike in sonde's (names and modules)")
	if !c.atLeast(95) {
		t.Errorf("%v samples with frames in the deleted file as perf shows them", &c)
	}
}

// TestJITCallersOfBuiltinsWithoutCFI: in a node --perf-basic-prof
// recording with --call-graph dwarf, a walk from a V8 builtin without CFI
// (Builtins_MathSqrt, called from JS code) goes on into the JS function
// that called it, named from the perf map, as perf's does (and on through
// the JS frames by their frame pointers, where perf stops): the JS code is
// in a range V8 reserved without PROT_EXEC, and no sample holds its bytes.
func TestJITCallersOfBuiltinsWithoutCFI(t *testing.T) {
	testprog.RequirePerf(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP (machine): no node (scripts/setup installs nodejs)")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "perf.data")
	js := "function hotLoop(n){let s=0;for(let i=0;i<n;i++){s+=Math.sqrt(i)*Math.sin(i)}return s}" +
		"const end=Date.now()+400;let x=0;while(Date.now()<end)x+=hotLoop(20000);"
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, node, "--perf-basic-prof", "--no-logfile-per-isolate", "--logfile="+filepath.Join(dir, "v8.log"), "-e", js)
	want := perfScript(t, out, "--no-inline")
	got, _ := sondeSamples(t, out, Options{NoInline: true})
	maps := map[string]bool{}
	t.Cleanup(func() {
		for m := range maps {
			os.Remove(m)
		}
	})
	var c tally
	for _, w := range want {
		js := -1
		for i, m := range w.mods {
			if strings.HasPrefix(m, "/tmp/perf-") {
				maps[m] = true
				if js < 0 {
					js = i
				}
			}
		}
		if js < 1 || strings.HasPrefix(w.mods[js-1], "/tmp/perf-") {
			continue // no JS frame, or one reached from JS code
		}
		g := got[w.key]
		c.add(len(g.names) > js && slices.Equal(g.names[:js+1], w.names[:js+1]) && g.mods[js] == w.mods[js], func() string {
			return fmt.Sprintf("%s:\n  sonde %q\n  perf  %q", w.key, g.names, w.names)
		})
	}
	c.log(t, "samples where perf reaches JS code from node's code, where sonde does too")
	if !c.atLeast(95) {
		t.Errorf("%v samples reach perf's first JS frame", &c)
	}
}

// TestLostSamplesMatchPerf: a recording whose ring buffer overflowed has
// both the kernel's LOST records and perf record's closing LOST_SAMPLES
// records for the same losses; sonde counts each lost sample once, as
// perf report --stats does.
func TestLostSamplesMatchPerf(t *testing.T) {
	testprog.RequirePerf(t)
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("SKIP (machine): no dd")
	}
	out := filepath.Join(t.TempDir(), "perf.data")
	// Every page fault of a 16 MiB buffer is a sample, into a one-page
	// ring: most are lost.
	// (testprog.PerfRecord adds a cpu-clock event, which -c 1 would sample
	// every nanosecond.)
	record := exec.Command("perf", "record", "-q", "-e", "page-faults", "-c", "1", "--call-graph", "dwarf,1024", "-m", "1", "-o", out, "--", dd, "if=/dev/zero", "of=/dev/null", "bs=16M", "count=4")
	if msg, err := record.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, msg)
	}
	stats, err := exec.Command("perf", "report", "--stats", "-i", out).Output()
	if err != nil {
		t.Fatalf("perf report --stats: %v", err)
	}
	// The event's own section ("page-faults stats:") ends the output.
	var perfLost, perfSamples uint64
	for _, l := range strings.Split(string(stats), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "LOST_SAMPLES" {
			fmt.Sscan(f[2], &perfLost)
		}
		if len(f) == 3 && f[0] == "SAMPLE" {
			fmt.Sscan(f[2], &perfSamples)
		}
	}
	rec, err := OpenRecording(out, Options{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if err := rec.Each(func(*Sample) error { return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("perf report --stats: %d samples, %d lost; sonde: %d, %d lost", perfSamples, perfLost, rec.Samples, rec.Lost())
	if perfLost == 0 {
		t.Skip("SKIP (machine): the kernel lost no sample; the case is not exercised")
	}
	if rec.Lost() != perfLost || rec.Samples != perfSamples {
		t.Errorf("sonde: %d samples, %d lost; perf report --stats: %d, %d", rec.Samples, rec.Lost(), perfSamples, perfLost)
	}
}
