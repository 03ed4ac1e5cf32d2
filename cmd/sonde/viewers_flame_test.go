package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// flamegraphPl is Brendan Gregg's flamegraph.pl as Debian ships it (in
// libdevel-nytprof-perl, which scripts/setup installs).
const flamegraphPl = "/usr/share/perl5/Devel/NYTProf/flamegraph.pl"

var flameTitle = regexp.MustCompile(`^(.*) \(([\d,]+) samples, ([\d.]+)%\)$`)

// checkFlamegraphPl pipes the folded stacks into flamegraph.pl: the SVG
// must be well-formed XML with one frame per node of the stacks' tree
// (flamegraph.pl merges common callers), each titled "name (N samples,
// P%)" with the samples below it, and the whole with sonde's count.
func checkFlamegraphPl(t *testing.T, o viewerOutput) {
	script := flamegraphPl
	if _, err := os.Stat(script); err != nil {
		if script, err = exec.LookPath("flamegraph.pl"); err != nil {
			t.Skip("SKIP: no flamegraph.pl (scripts/setup installs libdevel-nytprof-perl)")
		}
	}
	in, err := os.Open(o.folded)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// --minwidth 0: every frame is drawn, however narrow.
	cmd := exec.Command("perl", script, "--minwidth", "0", "--title", o.name)
	var svg, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &svg, &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Fatalf("flamegraph.pl: %v\n%s", err, errOut.String())
	}
	titles, err := svgTitles(svg.Bytes())
	if err != nil {
		t.Fatalf("flamegraph.pl's SVG: %v", err)
	}
	// What flamegraph.pl should draw: the tree of the stacks, named as it
	// names them ('<' and '>' become '(' and ')').
	stacks, counts := foldedLines(t, o.folded)
	angle := strings.NewReplacer("<", "(", ">", ")")
	nodes := map[string]int64{}
	names := map[string]string{}
	var total int64
	for i, st := range stacks {
		path := ""
		for _, name := range st {
			name = angle.Replace(name)
			path += name + "\x00"
			nodes[path] += counts[i]
			names[path] = name
		}
		total += counts[i]
	}
	if total != int64(o.foldedN) {
		t.Errorf("the folded counts add up to %d, sonde counted %d", total, o.foldedN)
	}
	want := map[string]int64{fmt.Sprintf("all (%d)", total): 1}
	for path, n := range nodes {
		want[fmt.Sprintf("%s (%d)", names[path], n)]++
	}
	got := map[string]int64{}
	for _, title := range titles {
		if title == o.name {
			continue // the page's own title
		}
		if strings.HasPrefix(title, "all (") {
			title = strings.Replace(strings.Replace(title, " samples, 100%", "", 1), ",", "", -1)
			got[title]++
			continue
		}
		m := flameTitle.FindStringSubmatch(title)
		if m == nil {
			t.Errorf("a frame titled %q", title)
			continue
		}
		n, _ := strconv.ParseInt(strings.ReplaceAll(m[2], ",", ""), 10, 64)
		if pct := fmt.Sprintf("%.2f", 100*float64(n)/float64(total)); pct != m[3] {
			t.Errorf("%q: %s%%, want %s%%", title, m[3], pct)
		}
		got[fmt.Sprintf("%s (%d)", m[1], n)]++
	}
	sameCounts(t, "flame graph frame", got, want)
	for _, name := range []string{o.hot, o.hotSubname} {
		if name != "" && !svgHasFrame(titles, angle.Replace(name)) {
			t.Errorf("no frame named %s in flamegraph.pl's graph", name)
		}
	}
	t.Logf("flamegraph.pl: %d frames, %d samples", len(titles)-1, total)
}

func svgHasFrame(titles []string, name string) bool {
	for _, title := range titles {
		if strings.HasPrefix(title, name+" (") {
			return true
		}
	}
	return false
}

// svgTitles parses an SVG as XML (strictly: an error is a malformed
// document) and returns the text of its <title> elements.
func svgTitles(svg []byte) ([]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var titles []string
	var in bool
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return titles, nil
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "title" {
				in = true
				text.Reset()
			}
		case xml.CharData:
			if in {
				text.Write(tok)
			}
		case xml.EndElement:
			if tok.Name.Local == "title" {
				in = false
				titles = append(titles, text.String())
			}
		}
	}
}

// --- speedscope ---

// speedscopeApp is the index.html of speedscope's web app (npm package
// speedscope, pinned by testdata/speedscope/package-lock.json), installed
// as scripts/setup installs it: npm ci into a cache directory named by the
// lock file's hash.
func speedscopeApp(t *testing.T) string {
	t.Helper()
	return filepath.Join(npmModules(t, "speedscope", "speedscope"), "speedscope", "dist", "release", "index.html")
}

// speedscopeRow is a row of speedscope's sandwich view: total and self
// weights, then the name.
var speedscopeRow = regexp.MustCompile(`(?s)<tr class="[^"]*"><td class="[^"]*">([\d,]+) \([^<]*<div.*?</td><td class="[^"]*">([\d,]+) \([^<]*<div.*?</td><td class="[^"]*"><span[^>]*></span>(.*?)</td></tr>`)

// speedscopeDraw follows the load script: it makes speedscope's sandwich
// table draw its rows without waiting for an animation frame. The table is
// a virtual list that measures its height, and so knows which rows to
// draw, only in a requestAnimationFrame after it is mounted (or on a window
// resize). A headless chromium's animation frames come from its compositor
// in real time, not from the virtual time --dump-dom waits out, and now and
// then none comes before the budget ends: the page then has the profile's
// title and an empty table — the flake this check had (reproduced by making
// requestAnimationFrame a no-op). A resize event, sent while the table is
// mounted without rows, measures it at once; the polls are timers, which
// virtual time runs. data-sonde-resizes on <body> counts the events sent.
const speedscopeDraw = `;(function draw(n) {
  if (document.querySelector('td')) return;
  if (document.querySelector('thead')) {
    window.dispatchEvent(new Event('resize'));
    document.body.dataset.sondeResizes = String(Number(document.body.dataset.sondeResizes || 0) + 1);
  }
  if (n > 0) setTimeout(draw, 20, n - 1);
})(1000);
`

var speedscopeResizes = regexp.MustCompile(`data-sonde-resizes="(\d+)"`)

// checkSpeedscope opens the folded stacks in speedscope's web app in
// headless chromium, as `speedscope FILE` does (a script handing the file
// to the app), in its sandwich view: its table must list every function
// of the stacks with its total and self samples, and name the file.
func checkSpeedscope(t *testing.T, app string, o viewerOutput) {
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("SKIP: no chromium (scripts/setup installs it): speedscope is a web app")
	}
	data, err := os.ReadFile(o.folded)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	name := filepath.Base(o.folded)
	script := filepath.Join(dir, "load.js")
	js := "speedscope.loadFileFromBase64(" + jsonString(name) + ", " + jsonString(base64.StdEncoding.EncodeToString(data)) + ");\n" + speedscopeDraw
	if err := os.WriteFile(script, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	// What the sandwich view should list: each name's samples (a name
	// twice on a stack counts once) and the samples it is innermost in.
	stacks, counts := foldedLines(t, o.folded)
	want := map[string]int64{}
	totals, selfs := map[string]int64{}, map[string]int64{}
	for i, st := range stacks {
		seen := map[string]bool{}
		for _, n := range st {
			if !seen[n] {
				seen[n] = true
				totals[n] += counts[i]
			}
		}
		selfs[st[len(st)-1]] += counts[i]
	}
	for n, total := range totals {
		want[fmt.Sprintf("%s: total %d, self %d", n, total, selfs[n])] = 1
	}
	// The table draws the rows in view: the window holds them all.
	height := 30*len(totals) + 800
	url := "file://" + app + "#localProfilePath=" + script + "&view=sandwich"
	// Virtual time passes only while the page is idle, and every step of
	// the load (the script, the import, the render, speedscopeDraw's
	// polls) runs in it: one budget is enough on a loaded machine.
	page, log := speedscopeDOM(t, chromium, url, height, 20000)
	if !strings.Contains(page, "<title>"+name+" - speedscope</title>") {
		t.Fatalf("speedscope did not load %s:\n%.3000s\nchromium: %s", name, htmlText(page), log)
	}
	if m := speedscopeResizes.FindStringSubmatch(page); m != nil {
		t.Logf("speedscope's table was measured on %s resize event(s), not on an animation frame", m[1])
	}
	got := map[string]int64{}
	for _, m := range speedscopeRow.FindAllStringSubmatch(page, -1) {
		total, _ := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
		self, _ := strconv.ParseInt(strings.ReplaceAll(m[2], ",", ""), 10, 64)
		got[fmt.Sprintf("%s: total %d, self %d", htmlUnescape(m[3]), total, self)]++
	}
	if len(got) == 0 {
		t.Fatalf("speedscope lists no function:\n%.3000s\nchromium: %s", htmlText(page), log)
	}
	sameCounts(t, "sandwich row", got, want)
	for _, n := range []string{o.hot, o.hotSubname} {
		if n != "" && totals[n] == 0 {
			t.Errorf("no %s in the folded stacks", n)
		}
	}
	t.Logf("speedscope: %d functions of %d samples listed", len(got), o.foldedN)
}

// speedscopeDOM loads url in headless chromium with a window height tall
// and returns the page as it stands after budget ms of virtual time, and
// the end of chromium's log. Chromium and its helpers are killed after.
func speedscopeDOM(t *testing.T, chromium, url string, height, budget int) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
		"--allow-file-access-from-files", "--user-data-dir="+t.TempDir(), "--no-first-run",
		fmt.Sprintf("--window-size=1200,%d", height), fmt.Sprintf("--virtual-time-budget=%d", budget), "--dump-dom", url)
	var dom, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &dom, &errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its helpers
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, lastLines(errOut.String(), 20))
	}
	return dom.String(), lastLines(errOut.String(), 20)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
