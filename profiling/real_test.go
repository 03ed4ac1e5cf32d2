package profiling

// Regressions found by reading recordings of real programs with sonde perf
// and perf side by side (bench/perf/REAL-PROGRAMS.md): each test records a
// program the way a profiler user does and compares with perf's reading.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// scriptText is sonde's Script output for a whole recording.
func scriptText(t *testing.T, path string, opts Options) string {
	rec, err := OpenRecording(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	var b bytes.Buffer
	sc := NewScript(&b, rec.Header())
	if err := rec.Each(sc.Write); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// withoutAddresses drops the address column of a script listing's frame
// lines (perf prints a file-relative address for frames its dwarf unwinder
// found, sonde the runtime one) and the version of versioned names.
func withoutAddresses(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "\t") {
			f := strings.Fields(l)
			// perf spells a dynamic symbol with its version
			// (__libc_start_main@@GLIBC_2.34+0x84); sonde does not.
			if at := strings.IndexByte(f[1], '@'); at > 0 {
				off := ""
				if j := strings.LastIndex(f[1], "+0x"); j > at {
					off = f[1][j:]
				}
				f[1] = f[1][:at] + off
			}
			lines[i] = "\t" + strings.Join(f[1:], " ")
		}
	}
	return lines
}

// TestScriptTextMatchesPerf compares sonde's script listing of a recording
// of two events line by line with perf script's default output: the sample
// lines exactly (command, tid, time, period, the event's name padded as
// perf pads it), the frame lines but for their addresses.
func TestScriptTextMatchesPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-e", "page-faults", "-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "200")
	want, err := exec.Command("perf", "script", "--no-inline", "-i", out).Output()
	if err != nil {
		t.Fatal(err)
	}
	w := blocks(withoutAddresses(string(want)))
	g := blocks(withoutAddresses(scriptText(t, out, Options{NoInline: true})))
	if len(w) == 0 || len(g) != len(w) {
		t.Fatalf("sonde lists %d samples, perf %d", len(g), len(w))
	}
	events := map[string]bool{}
	var headers, frames tally
	for i := range w {
		if f := strings.Fields(w[i][0]); len(f) > 0 {
			events[f[len(f)-1]] = true
		}
		headers.add(g[i][0] == w[i][0], func() string { return fmt.Sprintf("sample %d:\n  sonde %q\n  perf  %q", i, g[i][0], w[i][0]) })
		// Alike, or sonde's walk went on where perf's stopped.
		frames.add(len(g[i]) >= len(w[i]) && slices.Equal(g[i][1:len(w[i])], w[i][1:]), func() string {
			return fmt.Sprintf("sample %d:\n  sonde %q\n  perf  %q", i, g[i], w[i])
		})
	}
	headers.log(t, "sample lines alike")
	frames.log(t, "samples' frames alike (or extended)")
	t.Logf("events %v", events)
	if len(events) < 2 {
		t.Errorf("perf script shows the events %v, want two", events)
	}
	if headers.same != len(w) {
		t.Errorf("%v sample lines alike", &headers)
	}
	if !frames.atLeast(90) {
		t.Errorf("%v samples' frames alike", &frames)
	}
}

// blocks splits a script listing's lines into samples: the sample line,
// then its frame lines.
func blocks(lines []string) [][]string {
	var out [][]string
	for _, l := range lines {
		switch {
		case l == "":
		case !strings.HasPrefix(l, "\t"):
			out = append(out, []string{l})
		case len(out) > 0:
			out[len(out)-1] = append(out[len(out)-1], l)
		}
	}
	return out
}

// kernelNames is each sample's kernel frames, function+offset, by key.
func kernelNames(samples []scriptSample) map[string]string {
	out := map[string]string{}
	for _, s := range samples {
		var k []string
		for i, m := range s.mods {
			if m == "[kernel.kallsyms]" {
				k = append(k, s.names[i])
			}
		}
		out[s.key] = strings.Join(k, ";")
	}
	return out
}

// TestKernelFramesWithoutBuildIDs: a pipe-mode recording (no build-id
// table) and one perf record -z made (build-ids left empty) name their
// kernel frames from the running kernel, as perf does.
func TestKernelFramesWithoutBuildIDs(t *testing.T) {
	testprog.RequirePerf(t)
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("SKIP (machine): no dd")
	}
	dir := t.TempDir()
	args := []string{"if=/dev/zero", "of=/dev/null", "bs=64", "count=400000"}
	zstd := filepath.Join(dir, "zstd.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "-g", "-z", "-o", zstd}, dd, args...)
	pipe := filepath.Join(dir, "pipe.data")
	cmd := exec.Command("perf", append([]string{"record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o", "-", "--", dd}, args...)...)
	f, err := os.Create(pipe)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = f
	if err := cmd.Run(); err != nil {
		t.Fatalf("perf record -o -: %v", err)
	}
	f.Close()
	for _, path := range []string{zstd, pipe} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := kernelNames(perfScript(t, path, "-F", "tid,time,ip,sym,symoff,dso"))
			got, _ := sondeSamplesNamed(t, path, Options{NoInline: true}, ScriptName)
			var c tally
			for k, w := range want {
				if w == "" || strings.Contains(w, "[unknown]") {
					continue
				}
				var names []string
				for i, m := range got[k].mods {
					if m == "[kernel.kallsyms]" {
						names = append(names, got[k].names[i])
					}
				}
				g := strings.Join(names, ";")
				c.add(g == w, func() string { return fmt.Sprintf("%s:\n  sonde %s\n  perf  %s", k, g, w) })
			}
			c.log(t, "samples with named kernel frames alike")
			if !c.atLeast(99) {
				t.Errorf("%v samples' kernel frames as perf names them", &c)
			}
		})
	}
}

// TestVforkUnwinds: a sample taken in the vfork system call has glibc's
// __vfork innermost, its return address popped into rdi and its CFA at sp;
// the walk goes on to main (it stopped there as a corrupt stack before).
func TestVforkUnwinds(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_vfork.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", out}, prog, "300")
	rec, err := OpenRecording(out, Options{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	c := tally{keep: 3}
	err = rec.Each(func(s *Sample) error {
		for i, f := range s.Frames {
			if f.Kernel {
				continue
			}
			if !strings.Contains(f.Function, "vfork") {
				return nil
			}
			toMain := slices.ContainsFunc(s.Frames[i+1:], func(f Frame) bool { return f.Function == "main" })
			c.add(toMain, func() string {
				var b strings.Builder
				fmt.Fprintf(&b, "stop %q:", s.Stop)
				for _, f := range s.Frames[i:] {
					fmt.Fprintf(&b, " %s", ScriptName(&f))
				}
				return b.String()
			})
			return nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.log(t, "samples in vfork unwound to main")
	if !c.atLeast(95) {
		t.Errorf("%v samples in vfork unwound to main", &c)
	}
}

// TestCxxNamesMatchPerf: with --no-inline a C++ frame is named as perf
// names it, demangled without parameters (shapes::Grid<double>::sum).
func TestCxxNamesMatchPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_cxx.cc"}, Flags: []string{"-O2"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "200")
	agreeWithPerf(t, out, Options{NoInline: true}, "shapes::Grid<double>::sum")
}

// sameFrames compares sonde's frames with perf's, but where perf names a
// caller by the symbol its return address starts (X+0x0: the call was the
// last instruction of the function before, _start calling _dl_start), as
// perf does with frame-pointer chains; sonde names the caller.
func sameFrames(sonde, perf []string) bool {
	if len(sonde) != len(perf) {
		return false
	}
	for i := range perf {
		if sonde[i] != perf[i] && !(i > 0 && strings.HasSuffix(perf[i], "+0x0")) {
			return false
		}
	}
	return true
}

// agreeWithPerf compares every sample's frames, function+offset, with perf
// script --no-inline's; 97% must agree (or extend perf's) and some frame's
// name must contain want.
func agreeWithPerf(t *testing.T, path string, opts Options, want string) {
	t.Helper()
	perf := perfScript(t, path, "--no-inline", "-F", "tid,time,ip,sym,symoff,dso")
	got, _ := sondeSamplesNamed(t, path, opts, ScriptName)
	var c tally
	seen := false
	for _, w := range perf {
		g := got[w.key]
		for _, n := range g.names {
			seen = seen || strings.Contains(n, want)
		}
		// Alike, or sonde's walk went on where perf's stopped.
		n := len(w.names)
		c.add(len(g.names) >= n && sameFrames(g.names[:n], w.names), func() string {
			return fmt.Sprintf("%s:\n  sonde %s\n  perf  %s", w.key, strings.Join(g.names, ";"), strings.Join(w.names, ";"))
		})
	}
	c.log(t, "samples alike")
	if !c.atLeast(97) {
		t.Errorf("%v samples have perf's frames", &c)
	}
	if !seen {
		t.Errorf("no frame named %s", want)
	}
}

// TestJITFramesFromPerfMap records node, whose JIT writes
// /tmp/perf-PID.map, with frame pointers: JavaScript frames are named from
// the map (module the map's path) and callers' offsets are their return
// addresses', as perf script shows them.
func TestJITFramesFromPerfMap(t *testing.T) {
	testprog.RequirePerf(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP (machine): no node (scripts/setup installs nodejs)")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "perf.data")
	js := "function hotLoop(n){let s=0;for(let i=0;i<n;i++){s+=Math.sqrt(i)}return s}" +
		"const end=Date.now()+400;let x=0;while(Date.now()<end)x+=hotLoop(20000);"
	testprog.PerfRecord(t, []string{"-F", "2000", "-g", "-o", out}, node, "--perf-basic-prof", "--no-logfile-per-isolate", "--logfile="+filepath.Join(dir, "v8.log"), "-e", js)
	got, rec := sondeSamplesNamed(t, out, Options{NoInline: true}, ScriptName)
	pids := map[string]bool{}
	for _, s := range got {
		for i, m := range s.mods {
			if strings.HasPrefix(m, "/tmp/perf-") {
				pids[m] = true
				_ = i
			}
		}
	}
	t.Cleanup(func() {
		for m := range pids {
			os.Remove(m)
		}
	})
	rec.Close()
	if len(pids) == 0 {
		t.Fatal("no frame named from a perf map")
	}
	agreeWithPerf(t, out, Options{NoInline: true}, "hotLoop")
}

// TestThreadNamesMatchPerf: each sample is named by its thread's own name
// (pthread_setname_np), as perf names it, not by its process's.
func TestThreadNamesMatchPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_named.c"}, Flags: []string{"-O2", "-pthread"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "200")
	want, err := exec.Command("perf", "script", "-i", out, "-F", "comm,tid,time").Output()
	if err != nil {
		t.Fatal(err)
	}
	perfComm := map[string]string{}
	for _, line := range strings.Split(string(want), "\n") {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ":"))
		if len(f) >= 3 {
			perfComm[f[len(f)-2]+" "+strings.TrimSuffix(f[len(f)-1], ":")] = strings.Join(f[:len(f)-2], " ")
		}
	}
	rec, err := OpenRecording(out, Options{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	var c tally
	workers := 0
	err = rec.Each(func(s *Sample) error {
		k := fmt.Sprintf("%d %d.%06d", s.TID, s.Time/1e9, s.Time%1e9/1e3)
		if strings.HasPrefix(s.Comm, "worker-") {
			workers++
		}
		c.add(perfComm[k] == s.Comm, func() string { return fmt.Sprintf("%s: sonde %q, perf %q", k, s.Comm, perfComm[k]) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.log(t, "samples named as perf names them")
	t.Logf("%d samples in the named threads; perf has %d samples", workers, len(perfComm))
	if c.same != len(perfComm) || workers == 0 {
		t.Errorf("%d of %d samples named as perf names them, %d in worker threads", c.same, len(perfComm), workers)
	}
}
