package profiling

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// scriptSample is one sample as `perf script` prints it.
type scriptSample struct {
	key   string // "tid time"
	names []string
	mods  []string
}

// perfScript runs `perf script` on a recording and parses its samples.
func perfScript(t *testing.T, path string, args ...string) []scriptSample {
	argv := []string{"script", "-i", path}
	if !slices.Contains(args, "-F") {
		argv = append(argv, "-F", "tid,time,ip,sym,dso")
	}
	argv = append(argv, args...)
	out, err := exec.Command("perf", argv...).Output()
	if err != nil {
		t.Fatalf("perf %s: %v", strings.Join(argv, " "), err)
	}
	var samples []scriptSample
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case !strings.HasPrefix(line, "\t"):
			f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ":"))
			samples = append(samples, scriptSample{key: strings.Join(f, " ")})
		default:
			f := strings.Fields(line) // addr sym... (dso)
			if len(samples) == 0 || len(f) < 3 {
				continue
			}
			s := &samples[len(samples)-1]
			// perf spells a versioned dynamic symbol with its version
			// (__libc_start_main@@GLIBC_2.34, pthread_rwlock_rdlock@GLIBC_2.2.5);
			// sonde does not.
			name := strings.Join(f[1:len(f)-1], " ")
			if i := strings.Index(name, "@"); i > 0 {
				off := ""
				if j := strings.LastIndex(name, "+0x"); j > i {
					off = name[j:]
				}
				name = name[:i] + off
			}
			s.names = append(s.names, name)
			s.mods = append(s.mods, strings.Trim(f[len(f)-1], "()"))
		}
	}
	return samples
}

// sondeSamples reads a recording through OpenRecording, naming frames as
// FrameName does.
func sondeSamples(t *testing.T, path string, opts Options) (map[string]scriptSample, *Recording) {
	return sondeSamplesNamed(t, path, opts, FrameName)
}

// sondeSamplesNamed reads a recording through OpenRecording, naming frames with name.
func sondeSamplesNamed(t *testing.T, path string, opts Options, name func(*Frame) string) (map[string]scriptSample, *Recording) {
	rec, err := OpenRecording(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	got := map[string]scriptSample{}
	err = rec.Each(func(s *Sample) error {
		k := fmt.Sprintf("%d %d.%06d", s.TID, s.Time/1e9, s.Time%1e9/1e3)
		var ss scriptSample
		for i := range s.Frames {
			ss.names = append(ss.names, name(&s.Frames[i]))
			ss.mods = append(ss.mods, s.Frames[i].Module)
		}
		got[k] = ss
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, rec
}

// TestUserFramesMatchPerfScript compares every sample's frames, without
// inline frames, with perf script --no-inline on a dwarf recording of a
// program that forks (two processes sharing mappings).
func TestUserFramesMatchPerfScript(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", out}, prog, "400", "fork")
	want := perfScript(t, out, "--no-inline")
	got, rec := sondeSamples(t, out, Options{NoInline: true})
	if int(rec.Samples) != len(want) {
		t.Errorf("%d samples, perf script prints %d", rec.Samples, len(want))
	}
	same := 0
	var diffs []string
	for _, w := range want {
		g, ok := got[w.key]
		if !ok {
			diffs = append(diffs, "missing sample "+w.key)
			continue
		}
		if strings.Join(g.names, ";") == strings.Join(w.names, ";") {
			same++
			continue
		}
		if os.Getenv("DIFFALL") == "" && strings.Contains(strings.Join(g.names, ";"), "[ld-linux") {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s:\n  sonde %s\n  perf  %s", w.key, strings.Join(g.names, ";"), strings.Join(w.names, ";")))
	}
	ratio := float64(same) / float64(max(len(want), 1))
	t.Logf("%d of %d samples (%.2f%%) have perf script's frames", same, len(want), 100*ratio)
	for i, d := range diffs {
		if i == 10 {
			t.Logf("... %d more", len(diffs)-10)
			break
		}
		t.Log(d)
	}
	if ratio < 0.99 {
		t.Errorf("only %.2f%% of samples agree with perf script --no-inline (want 99%%)", 100*ratio)
	}
}

// TestScriptOffsetsMatchPerf compares every frame's function+offset, as
// sonde perf script prints them, with perf script's (-F +symoff), without
// and with inline frames, kernel frames included.
func TestScriptOffsetsMatchPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "200")
	for _, tc := range []struct {
		name string
		args []string
		opts Options
	}{
		{"no-inline", []string{"--no-inline"}, Options{NoInline: true}},
		{"inline", nil, Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := perfScript(t, out, append([]string{"-F", "tid,time,ip,sym,symoff,dso"}, tc.args...)...)
			got, _ := sondeSamplesNamed(t, out, tc.opts, ScriptName)
			frames, compared := tally{keep: 10}, 0
			for _, w := range want {
				g, ok := got[w.key]
				if !ok || len(g.names) != len(w.names) {
					continue // frame differences are TestUserFramesMatchPerfScript's
				}
				compared++
				for i := range w.names {
					// perf names the function of an inline frame
					// by DWARF, sonde too; compare the offsets
					// wherever both name the same function.
					frames.add(g.names[i] == w.names[i], func() string {
						return fmt.Sprintf("%s frame %d: sonde %s, perf %s", w.key, i, g.names[i], w.names[i])
					})
				}
			}
			frames.log(t, "frames have perf's function+offset")
			t.Logf("%d of %d samples compared", compared, len(want))
			if compared < len(want)*9/10 || frames.same < frames.n*99/100 {
				t.Errorf("%v frames of %d of %d samples agree with perf script", &frames, compared, len(want))
			}
		})
	}
}

// TestNamesCacheWarm reads a recording twice with a fresh persisted cache:
// the second read takes every name from the cache (no line table or symbol
// lookup) and gives the same stacks, in both naming modes.
func TestNamesCacheWarm(t *testing.T) {
	testprog.RequirePerf(t)
	t.Setenv("SONDE_CACHE_DIR", t.TempDir())
	t.Setenv("SONDE_NO_CACHE", "")
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "200")
	for _, opts := range []Options{{}, {NoInline: true}} {
		cold, rec := sondeSamplesNamed(t, out, opts, ScriptName)
		rec.Close() // stores the names
		warm, rec := sondeSamplesNamed(t, out, opts, ScriptName)
		loaded := 0
		for _, fn := range rec.b.persisted {
			loaded += fn.old.count()
			if len(fn.fresh) > 0 {
				t.Errorf("%s: %d names looked up again on the warm read", fn.module, len(fn.fresh))
			}
		}
		if loaded == 0 {
			t.Errorf("no name came from the cache (no-inline %v)", opts.NoInline)
		}
		if len(warm) != len(cold) {
			t.Fatalf("%d samples warm, %d cold", len(warm), len(cold))
		}
		for k, c := range cold {
			if w := warm[k]; strings.Join(w.names, ";") != strings.Join(c.names, ";") || strings.Join(w.mods, ";") != strings.Join(c.mods, ";") {
				t.Fatalf("sample %s: warm %v, cold %v", k, w.names, c.names)
			}
		}
	}
}

// TestEachMatchesSequential checks the parallel reading against the plain
// one: Each (samples unwound on several workers, batches back in order)
// must hand out the samples Builder.Add gives for the time-ordered records,
// in the same order with the same frames, on a recording of a program that
// forks (two address spaces, one a copy of the other's mappings).
func TestEachMatchesSequential(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", out}, prog, "300", "fork")
	eachMatchesSequential(t, out)
}

// TestEachMatchesSequentialRemapped: the same on a recording whose address
// spaces change between samples: a library loaded, unloaded (munmap) and
// loaded again, then a fork whose child execs (testdata/perf_remap.c). A
// sample bound to the mappings of another time names other functions.
func TestEachMatchesSequentialRemapped(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_remap.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", out}, prog, "60")
	samples := eachMatchesSequential(t, out)
	// The recording must show what the test is about: samples in libm
	// and in this program's own code, in both processes.
	inLibm, inOwn := map[uint32]bool{}, map[uint32]bool{}
	for _, s := range samples {
		for i := range s.Frames {
			switch f := &s.Frames[i]; {
			case strings.Contains(f.Module, "libm"):
				inLibm[s.PID] = true
			case f.Function == "own":
				inOwn[s.PID] = true
			}
		}
	}
	if len(inLibm) < 2 || len(inOwn) < 2 {
		t.Errorf("processes with samples in libm %v, in own %v: want the parent and the exec'd child in both", inLibm, inOwn)
	}
}

// eachMatchesSequential compares Each with Builder.Add on the recording
// out, with and without inline frames, on more workers than the machine
// may have cores; it returns Each's samples (with inline frames).
func eachMatchesSequential(t *testing.T, out string) []Sample {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	line := func(s *Sample) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %d %d %d %s:", s.Comm, s.PID, s.TID, s.Time, s.Stop)
		for i := range s.Frames {
			f := &s.Frames[i]
			fmt.Fprintf(&b, " %x %s+%x %s:%d %s %v", f.PC, f.Function, f.Offset, f.File, f.Line, f.Module, f.Inlined)
		}
		return b.String()
	}
	var kept []Sample
	for _, opts := range []Options{{}, {NoInline: true}} {
		rec, err := OpenRecording(out, opts)
		if err != nil {
			t.Fatal(err)
		}
		var parallel []string
		if err := rec.Each(func(s *Sample) error {
			parallel = append(parallel, line(s))
			if !opts.NoInline {
				c := *s
				c.Frames = slices.Clone(s.Frames)
				kept = append(kept, c)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		rec.Close()
		rec, err = OpenRecording(out, opts)
		if err != nil {
			t.Fatal(err)
		}
		var sequential []string
		for {
			r, err := rec.sorter.Next()
			if err != nil {
				break
			}
			if s := rec.b.Add(r); s != nil {
				sequential = append(sequential, line(s))
			}
		}
		rec.Close()
		if len(parallel) != len(sequential) || len(parallel) == 0 {
			t.Fatalf("%d samples from Each, %d from Add", len(parallel), len(sequential))
		}
		for i := range parallel {
			if parallel[i] != sequential[i] {
				t.Fatalf("sample %d:\n  Each %s\n  Add  %s", i, parallel[i], sequential[i])
			}
		}
		t.Logf("%d samples alike (no-inline %v)", len(parallel), opts.NoInline)
	}
	return kept
}

// TestEachStopsOnError: an error from the caller's function ends Each with
// that error, and the reader and the workers end with it.
func TestEachStopsOnError(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "4000", "--call-graph", "dwarf", "-o", out}, prog, "300")
	before := runtime.NumGoroutine()
	rec, err := OpenRecording(out, Options{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("enough")
	n := 0
	err = rec.Each(func(*Sample) error {
		if n++; n == 100 {
			return stop
		}
		return nil
	})
	rec.Close()
	if err != stop || n != 100 {
		t.Fatalf("Each returned %v after %d samples, want %v after 100", err, n, stop)
	}
	// The kernel symbols' loader may still run; everything else is gone.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+1 {
		t.Errorf("%d goroutines after Each stopped, %d before", g, before)
	}
}
