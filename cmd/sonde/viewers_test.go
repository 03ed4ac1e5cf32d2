package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/sondedbg/sonde/internal/testprog"
)

// viewerOutput is one profile sonde wrote, folded and pprof, with the
// sample count sonde reported for each.
type viewerOutput struct {
	name                string // what made it: "perf spin", "profile spin", ...
	folded, pprof       string // the files
	foldedN, pprofN     int    // sonde's counts (its stderr)
	hot, hotFile        string // a function that must show, and its file's base name
	hotText, hotSubname string // a line of its source; a name with spaces that must show ("" none)
}

// TestOutputsOpenInViewers opens what sonde perf folded, sonde perf pprof
// and sonde profile write in the viewers their users open them in —
// pprof's web UI, flamegraph.pl and speedscope — and checks that each
// viewer shows what the profile holds: every sample, every function with
// its counts, files and lines, inline frames, and C++ names with spaces,
// parentheses, commas and angle brackets. SONDE_VIEWERS_RECORDING=perf.data
// adds that recording's outputs.
func TestOutputsOpenInViewers(t *testing.T) {
	outs := viewerOutputs(t)
	t.Run("pprof", func(t *testing.T) {
		for _, o := range outs {
			t.Run(o.name, func(t *testing.T) { checkPprofWebUI(t, o) })
		}
	})
	t.Run("flamegraph.pl", func(t *testing.T) {
		for _, o := range outs {
			t.Run(o.name, func(t *testing.T) { checkFlamegraphPl(t, o) })
		}
	})
	t.Run("speedscope", func(t *testing.T) {
		app := speedscopeApp(t)
		for _, o := range outs {
			if o.name == "perf spin" {
				continue // profile spin shows the same names; each page costs seconds
			}
			if o.hot == "" {
				t.Logf("%s: %d samples", o.name, o.foldedN)
			}
			t.Run(o.name, func(t *testing.T) { checkSpeedscope(t, app, o) })
		}
	})
}

var sondeSamples = regexp.MustCompile(`sonde (?:perf|profile): (\d+) samples`)

// viewerOutputs records perf_spin (an inlined helper) and perf_viewers (C++
// names) with perf --call-graph dwarf and writes sonde perf's outputs of
// each, and samples perf_spin with sonde profile (when perf_event_open is
// allowed).
func viewerOutputs(t *testing.T) []viewerOutput {
	testprog.RequirePerf(t)
	dir := t.TempDir()
	spin := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
	cxx := testprog.Build(t, testprog.Spec{Sources: []string{"perf_viewers.cc"}, Flags: []string{"-O2"}})
	run := func(args ...string) int {
		t.Helper()
		_, errOut, code := runCLI(t, args...)
		m := sondeSamples.FindStringSubmatch(errOut)
		if code != 0 || m == nil {
			t.Fatalf("sonde %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	var outs []viewerOutput
	for _, p := range []struct {
		name, prog string
		o          viewerOutput
	}{
		{"spin", spin, viewerOutput{hot: "leaf", hotFile: "perf_spin.c", hotText: "x = mix(x + i);"}},
		{"viewers", cxx, viewerOutput{hot: "(anonymous namespace)::spin", hotFile: "perf_viewers.cc", hotText: "s += step(200 + i % 3);",
			hotSubname: "(anonymous namespace)::Pair<int, long int>::operator()"}},
	} {
		data := filepath.Join(dir, p.name+".data")
		testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", data}, p.prog, "300")
		o := p.o
		o.name = "perf " + p.name
		o.folded, o.pprof = filepath.Join(dir, p.name+".folded"), filepath.Join(dir, p.name+".pb.gz")
		o.foldedN = run("perf", "folded", "-i", data, "-o", o.folded)
		o.pprofN = run("perf", "pprof", "-i", data, "-o", o.pprof)
		outs = append(outs, o)
	}
	// Rust (rustc links with lld: segments packed in the file's pages).
	if rs := rustProgram(t, "perf_viewers.rs"); rs != "" {
		data := filepath.Join(dir, "rust.data")
		testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", data}, rs, "300")
		o := viewerOutput{name: "perf rust", hot: "perf_viewers::spin", hotFile: "perf_viewers.rs",
			hotText: "(0..n).map(|i| step(200 + i % 3)).fold(0, u64::wrapping_add)", hotSubname: "<perf_viewers::Pair<u32,u64> as perf_viewers::Work>::run"}
		o.folded, o.pprof = filepath.Join(dir, "rust.folded"), filepath.Join(dir, "rust.pb.gz")
		o.foldedN = run("perf", "folded", "-i", data, "-o", o.folded)
		o.pprofN = run("perf", "pprof", "-i", data, "-o", o.pprof)
		outs = append(outs, o)
	}
	// Any recording, to open a program the tests have not seen.
	if data := os.Getenv("SONDE_VIEWERS_RECORDING"); data != "" {
		o := viewerOutput{name: "perf " + filepath.Base(data)}
		o.folded, o.pprof = filepath.Join(dir, "any.folded"), filepath.Join(dir, "any.pb.gz")
		o.foldedN = run("perf", "folded", "-i", data, "-o", o.folded)
		o.pprofN = run("perf", "pprof", "-i", data, "-o", o.pprof)
		outs = append(outs, o)
	}
	o := outs[0]
	o.name = "profile spin"
	o.folded, o.pprof = filepath.Join(dir, "profile.folded"), filepath.Join(dir, "profile.pb.gz")
	// The folded run tells whether sonde profile can sample here at all.
	_, errOut, code := runCLI(t, "profile", "folded", "-F", "2000", "-o", o.folded, "--", spin, "300")
	if code != 0 {
		t.Logf("SKIP (machine) of sonde profile's outputs: %s", strings.TrimSpace(errOut))
		return outs
	}
	m := sondeSamples.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("sonde profile folded: no sample count: %s", errOut)
	}
	o.foldedN, _ = strconv.Atoi(m[1])
	o.pprofN = run("profile", "pprof", "-F", "2000", "-o", o.pprof, "--", spin, "300")
	return append(outs, o)
}

// rustProgram builds testdata/src with rustc -O -g, "" (and a note)
// without rustc.
func rustProgram(t *testing.T, src string) string {
	t.Helper()
	rustc := testprog.Rustc()
	if rustc == "" {
		t.Logf("SKIP of the Rust program: rustc is not installed (scripts/setup installs it)")
		return ""
	}
	prog, err := testprog.BuildRustE(rustc, src, strings.TrimSuffix(src, ".rs")+"_rs", "-C", "opt-level=2")
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// --- pprof's web UI ---

// checkPprofWebUI serves the profile with go tool pprof -http and reads
// its pages as a browser gets them: the flame graph's stacks (names, files,
// inline frames, counts) must be the profile's samples, the top table by
// line must hold each function's line with its count, the source view must
// show the hot function's source, and the graph view (with Graphviz) must
// draw it.
func checkPprofWebUI(t *testing.T, o viewerOutput) {
	b, err := os.ReadFile(o.pprof)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	base := pprofServer(t, o.pprof)

	// The flame graph: one stack per sample, callers first.
	page := httpGet(t, base+"/ui/flamegraph?si=samples")
	var set struct {
		Total  int64
		Stacks []struct {
			Value   int64
			Sources []int
		}
		Sources []struct {
			FullName, FileName string
			Inlined            bool
		}
	}
	i := strings.LastIndex(page, "stackViewer(")
	if i < 0 {
		t.Fatalf("no stackViewer( in the flame graph page:\n%.2000s", page)
	}
	if err := json.NewDecoder(strings.NewReader(page[i+len("stackViewer("):])).Decode(&set); err != nil {
		t.Fatalf("the flame graph's stacks: %v", err)
	}
	if set.Total != int64(o.pprofN) {
		t.Errorf("the flame graph counts %d samples, sonde %d", set.Total, o.pprofN)
	}
	got := map[string]int64{}
	for _, st := range set.Stacks {
		var names []string
		for k, src := range st.Sources {
			if k == 0 && src == 0 {
				continue // the root
			}
			s := set.Sources[src]
			names = append(names, stackName(s.FullName, s.FileName, s.Inlined))
		}
		got[strings.Join(names, "\n")] += st.Value
	}
	want := map[string]int64{}
	flat := map[string]int64{}   // "function line" of the innermost frame
	flatFn := map[string]int64{} // the innermost function
	sawInline := false
	for _, s := range p.Sample {
		var names []string
		for li := len(s.Location) - 1; li >= 0; li-- {
			loc := s.Location[li]
			for k := len(loc.Line) - 1; k >= 0; k-- {
				fn := loc.Line[k].Function
				// Each line but a location's last (outermost) is
				// a function inlined into the next.
				inlined := k < len(loc.Line)-1
				names = append(names, stackName(fn.Name, fn.Filename, inlined))
				sawInline = sawInline || inlined
			}
		}
		want[strings.Join(names, "\n")] += s.Value[0]
		l := s.Location[0].Line[0]
		if l.Line > 0 {
			flat[fmt.Sprintf("%s %d", l.Function.Name, l.Line)] += s.Value[0]
		}
		flatFn[l.Function.Name] += s.Value[0]
	}
	if !sawInline {
		t.Errorf("the profile has no inline frame")
	}
	sameCounts(t, "flame graph stack", got, want)
	if o.hot != "" && !strings.Contains(page, `"FullName":`+jsonString(o.hot)) {
		t.Errorf("the flame graph does not name %s", o.hot)
	}

	// Top, by line: "function file:line" rows with their flat counts.
	page = httpGet(t, base+"/ui/top?si=samples&g=lines&nf=0&n=100000")
	i = strings.LastIndex(page, "makeTopTable(")
	if i < 0 {
		t.Fatalf("no makeTopTable( in the top page:\n%.2000s", page)
	}
	rest := page[i+len("makeTopTable("):]
	rest = rest[strings.IndexByte(rest, ',')+1:]
	var rows []struct {
		Name        string
		InlineLabel string
		Flat, Cum   int64
	}
	if err := json.NewDecoder(strings.NewReader(rest)).Decode(&rows); err != nil {
		t.Fatalf("the top table: %v", err)
	}
	gotFlat := map[string]int64{}
	for _, r := range rows {
		// "name file:line", the file as pprof shortens it; a row
		// without a line is "name" alone.
		if m := topLine.FindStringSubmatch(r.Name); m != nil && r.Flat != 0 {
			gotFlat[m[1]+" "+m[2]] += r.Flat
		}
	}
	sameCounts(t, "top row by line", gotFlat, flat)

	if o.hot == "" {
		return
	}
	checkPprofSource(t, base, o)
	// The graph (Graphviz's dot draws it): the function with the most
	// samples of its own, a name's "::" parts on lines of their own.
	// (pprof leaves out links of long call chains when the graph has more
	// than 80 nodes: the hot caller may not be drawn.)
	if _, err := exec.LookPath("dot"); err != nil {
		t.Logf("SKIP of the graph view: no dot (scripts/setup installs graphviz)")
		return
	}
	top := ""
	for fn, n := range flatFn {
		if top == "" || n > flatFn[top] || n == flatFn[top] && fn < top {
			top = fn
		}
	}
	page = htmlText(httpGet(t, base+"/ui/graph?si=samples"))
	for _, part := range strings.Split(top, "::") {
		if !strings.Contains(page, part) {
			t.Errorf("the graph view draws no %s (no %q):\n%.2000s", top, part, page)
		}
	}
}

// checkPprofSource checks the source view of the hot function: its source,
// with counts. pprof reads the lines of the binary's code there, when it
// has the binary, rather than the profile's: with rustc's DWARF it finds
// none (its own reader), so a Rust function is checked with -list, which
// shows the profile's lines.
func checkPprofSource(t *testing.T, base string, o viewerOutput) {
	if strings.HasSuffix(o.hotFile, ".rs") {
		out, err := exec.Command("go", "tool", "pprof", "-sample_index=samples", "-list", "^"+regexp.QuoteMeta(o.hot)+"$", o.pprof).CombinedOutput()
		if err != nil || !strings.Contains(string(out), o.hotText) || !strings.Contains(string(out), o.hotFile) {
			t.Errorf("go tool pprof -list %s: %v\n%.3000s", o.hot, err, out)
		}
		return
	}
	// The source view of the hot function: its source, with counts.
	page := httpGet(t, base+"/ui/source?si=samples&f="+url.QueryEscape(regexp.QuoteMeta(o.hot)))
	if i := strings.Index(page, `id="content"`); i >= 0 {
		page = page[i:] // the listing, not the menus' styles
	}
	text := htmlText(page)
	if !strings.Contains(text, o.hotText) || !strings.Contains(text, o.hotFile) {
		t.Errorf("the source view of %s does not show %q of %s:\n%.3000s", o.hot, o.hotText, o.hotFile, text)
	}
}

var topLine = regexp.MustCompile(`^(.*) \S+:(\d+)$`)

func stackName(name, file string, inlined bool) string {
	if inlined {
		return name + " (" + file + ", inline)"
	}
	return name + " (" + file + ")"
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var htmlTags = regexp.MustCompile(`<[^>]*>`)

// htmlText is a page's text: no tags, entities decoded.
func htmlText(page string) string {
	return htmlUnescape(htmlTags.ReplaceAllString(page, ""))
}

func htmlUnescape(s string) string {
	r := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&quot;", `"`, "&#45;", "-", "&amp;", "&")
	return r.Replace(s)
}

// sameCounts compares what a viewer shows (got) with what the profile
// holds (want), key by key, listing a few differences.
func sameCounts(t *testing.T, what string, got, want map[string]int64) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		if got[k] != w {
			diffs = append(diffs, fmt.Sprintf("%s %q: the viewer shows %d, the profile holds %d", what, k, got[k], w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %q: the viewer shows %d, not in the profile", what, k, g))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%d of %d %ss differ:\n%s", len(diffs), len(want), what, strings.Join(diffs[:min(len(diffs), 8)], "\n"))
	}
}

// pprofServer runs go tool pprof -http on a free port and returns its
// address once it answers; the test's end kills it (its process group:
// go tool runs pprof as a child).
func pprofServer(t *testing.T, file string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command("go", "tool", "pprof", "-http="+addr, "-no_browser", file)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	base := "http://" + addr
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("go tool pprof -http ended: %v\n%s", err, log.String())
		default:
		}
		resp, err := http.Get(base + "/ui/top")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("go tool pprof -http=%s does not answer: %v", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s\n%.1000s", url, err, resp.Status, b)
	}
	return string(b)
}

// --- folded stacks: what each frame of a flame graph should say ---

// foldedLines reads a folded file: each stack (its frames) and count.
func foldedLines(t *testing.T, path string) ([][]string, []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stacks [][]string
	var counts []int64
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("%s: folded line %q", path, line)
		}
		stacks = append(stacks, strings.Split(line[:i], ";"))
		counts = append(counts, n)
	}
	return stacks, counts
}
