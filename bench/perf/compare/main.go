// Command compare reads one recording with `perf script` and with `sonde perf
// script` and says, sample by sample, how far they agree: the samples each
// prints, their command names, pids and tids, and their stacks (user and
// kernel frames, function+offset and modules), with examples of the stacks
// that differ.
//
//	go run ./bench/perf/compare [-sonde PATH] [-inline] [-n EXAMPLES] perf.data
//
// Without -inline both read with --no-inline (one frame per physical frame,
// named by its ELF symbol); with it, perf script's inline frames (through
// addr2line) against sonde's (DWARF). Used for bench/perf/REAL-PROGRAMS.md.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

// sample is one sample as a script listing prints it.
type sample struct {
	comm, tid, time, event string
	frames                 []frame
}

type frame struct {
	addr, name, mod string
	kernel          bool
}

// header matches "comm [pid/]tid [cpu] time: [period] event: ".
var header = regexp.MustCompile(`^(.*?)\s+(?:(\d+)/)?(-?\d+)\s+(?:\[(\d+)\]\s+)?(\d+\.\d+):\s+(?:(\d+)\s+)?(\S+?):?\s*$`)

func parse(out []byte) ([]sample, error) {
	var samples []sample
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case !strings.HasPrefix(line, "\t"):
			m := header.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("header line %q", line)
			}
			samples = append(samples, sample{comm: strings.TrimSpace(m[1]), tid: m[3], time: m[5], event: m[7]})
		default:
			f := strings.Fields(line)
			if len(samples) == 0 || len(f) < 3 {
				return nil, fmt.Errorf("frame line %q", line)
			}
			s := &samples[len(samples)-1]
			name := strings.Join(f[1:len(f)-1], " ")
			// perf spells a versioned dynamic symbol with its version
			// (__libc_start_main@@GLIBC_2.34); sonde does not.
			if i := strings.Index(name, "@"); i > 0 {
				off := ""
				if j := strings.LastIndex(name, "+0x"); j > i {
					off = name[j:]
				}
				name = name[:i] + off
			}
			mod := strings.Trim(f[len(f)-1], "()")
			s.frames = append(s.frames, frame{addr: f[0], name: name, mod: mod, kernel: strings.HasPrefix(mod, "[kernel") || strings.HasPrefix(f[0], "ffffffff")})
		}
	}
	return samples, sc.Err()
}

func run(name string, args ...string) []byte {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		os.Exit(1)
	}
	return out
}

func names(fs []frame, kernel bool, offsets bool) string {
	var b []string
	for _, f := range fs {
		if f.kernel != kernel {
			continue
		}
		n := f.name
		if !offsets {
			if i := strings.LastIndex(n, "+0x"); i > 0 {
				n = n[:i]
			}
		}
		b = append(b, n)
	}
	return strings.Join(b, ";")
}

func mods(fs []frame) string {
	var b []string
	for _, f := range fs {
		b = append(b, f.mod)
	}
	return strings.Join(b, ";")
}

func countUnknown(ss []sample) (n int) {
	for _, s := range ss {
		for _, f := range s.frames {
			if strings.HasPrefix(f.name, "[unknown]") {
				n++
			}
		}
	}
	return n
}

func main() {
	sonde := flag.String("sonde", "sonde", "the sonde binary")
	inline := flag.Bool("inline", false, "compare with inline frames")
	examples := flag.Int("n", 5, "examples of differing stacks to print")
	only := flag.String("only", "", "print examples only of differences whose kind contains this")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: compare [-sonde PATH] [-inline] perf.data")
		os.Exit(2)
	}
	data := flag.Arg(0)
	pargs := []string{"script", "-i", data, "-F", "comm,tid,time,event,ip,sym,symoff,dso"}
	sargs := []string{"perf", "script", "-i", data}
	if !*inline {
		pargs = append(pargs, "--no-inline")
		sargs = append(sargs, "--no-inline")
	}
	want, err := parse(run("perf", pargs...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf script:", err)
		os.Exit(1)
	}
	got, err := parse(run(*sonde, sargs...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sonde perf script:", err)
		os.Exit(1)
	}
	key := func(s *sample) string { return s.tid + " " + s.time + " " + s.event }
	byKey := map[string][]*sample{}
	for i := range got {
		k := key(&got[i])
		byKey[k] = append(byKey[k], &got[i])
	}
	var matched int
	st := stats{firstDiff: map[string]int{}}
	for i := range want {
		w := &want[i]
		k := key(w)
		gs := byKey[k]
		if len(gs) == 0 {
			st.firstDiff["sample missing from sonde"]++
			if len(st.diffs) < *examples {
				st.diffs = append(st.diffs, "missing: "+k+" "+w.comm)
			}
			continue
		}
		g := gs[0]
		byKey[k] = gs[1:]
		// perf's libdw unwinder ends a stack whose outermost return
		// address is 0 with a frame at pc -1 ([unknown]): no frame.
		if n := len(w.frames); n > 0 && w.frames[n-1].addr == "ffffffffffffffff" {
			w.frames = w.frames[:n-1]
			st.endMarks++
		}
		matched++
		compareSample(w, g, k, &st, *examples, *only)
	}
	complete := func(ss []sample) (n int) {
		for _, s := range ss {
			if len(s.frames) == 0 {
				continue
			}
			switch f := s.frames[len(s.frames)-1]; {
			case strings.HasPrefix(f.name, "_start+"), strings.HasPrefix(f.name, "__clone3+"), strings.HasPrefix(f.name, "clone3+"),
				strings.HasPrefix(f.name, "__clone+"), strings.HasPrefix(f.name, "clone+"), f.kernel:
				n++
			}
		}
		return n
	}
	extra := 0
	for _, gs := range byKey {
		extra += len(gs)
	}
	pct := func(n int) string { return fmt.Sprintf("%d (%.2f%%)", n, 100*float64(n)/float64(max(len(want), 1))) }
	fmt.Printf("recording %s (inline %v)\n", data, *inline)
	fmt.Printf("  samples: perf %d, sonde %d, matched by tid+time+event %d, sonde only %d\n", len(want), len(got), matched, extra)
	fmt.Printf("  same comm %s, same event %s\n", pct(st.comm), pct(st.event))
	fmt.Printf("  same stack (function+offset, every frame) %s; functions only %s\n", pct(st.all), pct(st.allNoOff))
	fmt.Printf("  same user frames %s, same kernel frames %s, same modules %s\n", pct(st.user), pct(st.kern), pct(st.modsSame))
	fmt.Printf("  stacks ending in _start, clone, clone3 or the kernel (complete): perf %s, sonde %s\n", pct(complete(want)), pct(complete(got)))
	fmt.Printf("  [unknown] frames: perf %d, sonde %d; perf's pc -1 end frames dropped: %d\n", countUnknown(want), countUnknown(got), st.endMarks)
	var ks []string
	for k := range st.firstDiff {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return st.firstDiff[ks[i]] > st.firstDiff[ks[j]] })
	for _, k := range ks {
		fmt.Printf("  %6d %s\n", st.firstDiff[k], k)
	}
	for _, d := range st.diffs {
		fmt.Println(d)
	}
}

func shortMod(m string) string {
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		return m[i+1:]
	}
	return m
}

// stats are what the comparison counts.
type stats struct {
	comm, event, all, allNoOff, user, kern, modsSame, endMarks int
	firstDiff                                                  map[string]int
	diffs                                                      []string
}

// compareSample compares one sample perf printed (w) with sonde's (g).
func compareSample(w, g *sample, k string, st *stats, examples int, only string) {
	if g.comm == w.comm {
		st.comm++
	} else {
		st.firstDiff[fmt.Sprintf("comm %q vs perf %q", g.comm, w.comm)]++
	}
	if g.event == w.event {
		st.event++
	}
	if names(g.frames, false, true) == names(w.frames, false, true) && names(g.frames, true, true) == names(w.frames, true, true) {
		st.all++
	}
	if names(g.frames, false, false) == names(w.frames, false, false) && names(g.frames, true, false) == names(w.frames, true, false) {
		st.allNoOff++
	}
	us := names(g.frames, false, true) == names(w.frames, false, true)
	ks := names(g.frames, true, true) == names(w.frames, true, true)
	if us {
		st.user++
	}
	if ks {
		st.kern++
	}
	if mods(g.frames) == mods(w.frames) {
		st.modsSame++
	}
	if !us || !ks {
		// Where do they part?
		gf, wf := g.frames, w.frames
		j := 0
		for j < len(gf) && j < len(wf) && gf[j].name == wf[j].name {
			j++
		}
		what := "sonde has more frames"
		switch {
		case j < len(gf) && j < len(wf):
			what = fmt.Sprintf("differ at a %s frame (%s)", map[bool]string{true: "kernel", false: "user"}[wf[j].kernel], shortMod(wf[j].mod))
		case j < len(wf):
			what = fmt.Sprintf("sonde stops early (perf's next: %s)", shortMod(wf[j].mod))
		}
		st.firstDiff[what]++
		if len(st.diffs) < examples && strings.Contains(what, only) {
			var b strings.Builder
			fmt.Fprintf(&b, "%s %s:\n", w.comm, k)
			for x := 0; x < max(len(gf), len(wf)); x++ {
				gs, ws := "", ""
				if x < len(gf) {
					gs = gf[x].name + " (" + shortMod(gf[x].mod) + ")"
				}
				if x < len(wf) {
					ws = wf[x].name + " (" + shortMod(wf[x].mod) + ")"
				}
				mark := " "
				if gs != ws {
					mark = "!"
				}
				fmt.Fprintf(&b, "   %s %-60s | %s\n", mark, gs, ws)
			}
			st.diffs = append(st.diffs, b.String())
		}
	}
}
