package debuginfod_test

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols/debugfile"
	"github.com/sondedbg/sonde/symbols/debuginfod"
	"github.com/sondedbg/sonde/symbols/debuginfod/debuginfodtest"
)

// served is a test program split into a stripped executable and its debug
// file, in a directory a debuginfod server can index.
type served struct {
	dir, exe, debug, source string
	buildID                 []byte
}

func prepare(t *testing.T) served {
	t.Helper()
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"sym_plt.c"}, Flags: []string{"-O1"}, Name: "sym_dinfod"})
	s := served{dir: t.TempDir(), source: testprog.Source("sym_plt.c")}
	s.exe, s.debug = filepath.Join(s.dir, "prog"), filepath.Join(s.dir, "prog.debug")
	for _, args := range [][]string{
		{"--only-keep-debug", bin, s.debug},
		{"--strip-debug", bin, s.exe},
	} {
		if out, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, out)
		}
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s.buildID, err = debugfile.BuildID(f); err != nil || s.buildID == nil {
		t.Fatalf("test binary has no build-id: %v", err)
	}
	return s
}

func sameFile(t *testing.T, got, want string) {
	t.Helper()
	a, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s (%d bytes) differs from %s (%d bytes)", got, len(a), want, len(b))
	}
}

func TestAgainstRealServer(t *testing.T) {
	s := prepare(t)
	srv := debuginfodtest.Start(t, s.dir, s.buildID)
	cache := t.TempDir()
	c, err := debuginfod.New(debuginfod.Options{URLs: []string{srv.URL}, CacheDir: cache, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Concurrent first requests for one artifact: all succeed, one file.
	var wg sync.WaitGroup
	paths := make([]string, 4)
	errs := make([]error, 4)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = c.DebugInfo(ctx, s.buildID)
		}()
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil {
			t.Fatalf("DebugInfo: %v", errs[i])
		}
		sameFile(t, paths[i], s.debug)
	}
	if !strings.HasPrefix(paths[0], cache) {
		t.Errorf("DebugInfo path %s is not in the cache %s", paths[0], cache)
	}
	exe, err := c.Executable(ctx, s.buildID)
	if err != nil {
		t.Fatalf("Executable: %v", err)
	}
	sameFile(t, exe, s.exe)
	src, err := c.Source(ctx, s.buildID, s.source)
	if err != nil {
		t.Fatalf("Source(%s): %v", s.source, err)
	}
	sameFile(t, src, s.source)

	unknown := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}
	if _, err := c.DebugInfo(ctx, unknown); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatalf("unknown build-id: %v, want ErrNotFound", err)
	}
	// No temporary files left behind.
	entries, _ := filepath.Glob(filepath.Join(cache, "*", ".tmp-*"))
	if len(entries) > 0 {
		t.Errorf("temporary files left in the cache: %v", entries)
	}

	// With the server gone, cached answers (positive and negative) remain,
	// and a question never asked is a network error, not "not found".
	srv.Stop()
	if p, err := c.DebugInfo(ctx, s.buildID); err != nil || p != paths[0] {
		t.Errorf("cached DebugInfo after server stop: %q, %v", p, err)
	}
	if _, err := c.DebugInfo(ctx, unknown); !errors.Is(err, debuginfod.ErrNotFound) {
		t.Errorf("negative cache: %v, want ErrNotFound without asking", err)
	}
	other := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	_, err = c.DebugInfo(ctx, other)
	var de *debuginfod.Error
	if err == nil || errors.Is(err, debuginfod.ErrNotFound) || !errors.As(err, &de) || de.URL == "" {
		t.Errorf("server down: %v, want a network error naming the server", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "0102030405060708", "debuginfo.notfound")); err == nil {
		t.Errorf("a network failure was cached as not found")
	}
}

func TestSizeLimit(t *testing.T) {
	s := prepare(t)
	srv := debuginfodtest.Start(t, s.dir, s.buildID)
	cache := t.TempDir()
	c, err := debuginfod.New(debuginfod.Options{URLs: []string{srv.URL}, CacheDir: cache, MaxSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DebugInfo(context.Background(), s.buildID); !errors.Is(err, debuginfod.ErrTooLarge) {
		t.Fatalf("100-byte limit: %v, want ErrTooLarge", err)
	}
	left, _ := filepath.Glob(filepath.Join(cache, "*", "*"))
	if len(left) != 0 {
		t.Errorf("refused download left files: %v", left)
	}
}

// TestTimeout: a server that accepts and never answers.
func TestTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	c, err := debuginfod.New(debuginfod.Options{URLs: []string{"http://" + l.Addr().String()}, CacheDir: t.TempDir(), Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.DebugInfo(context.Background(), []byte{1, 2, 3, 4})
	if err == nil || errors.Is(err, debuginfod.ErrNotFound) {
		t.Fatalf("silent server: %v, want a timeout error", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("timeout of 300ms took %v", d)
	}
}

// TestBadServers: answers a real server could give when broken or
// misconfigured are errors, never cached, and the next server is asked.
func TestBadServers(t *testing.T) {
	elfBytes, err := os.ReadFile(testprog.Build(t, testprog.Spec{Sources: []string{"sym_plt.c"}, Flags: []string{"-O1"}, Name: "sym_dinfod"}))
	if err != nil {
		t.Fatal(err)
	}
	var hits sync.Map
	handler := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			hits.Store(kind, true)
			switch kind {
			case "500":
				http.Error(w, "boom", http.StatusInternalServerError)
			case "html":
				w.Write([]byte("<html>not an ELF file</html>"))
			case "short":
				w.Header().Set("Content-Length", "100000")
				w.Write(elfBytes[:10])
			case "good":
				w.Write(elfBytes)
			}
		}
	}
	var urls []string
	for _, k := range []string{"500", "html", "short", "good"} {
		ts := httptest.NewServer(handler(k))
		defer ts.Close()
		urls = append(urls, ts.URL)
	}
	cache := t.TempDir()
	c, err := debuginfod.New(debuginfod.Options{URLs: urls, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Executable(context.Background(), []byte{9, 9, 9, 9})
	if err != nil {
		t.Fatalf("fourth server has it: %v", err)
	}
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, elfBytes) {
		t.Errorf("cached executable differs from what the good server sent")
	}
	for _, k := range []string{"500", "html", "short", "good"} {
		if _, ok := hits.Load(k); !ok {
			t.Errorf("server %s was not asked", k)
		}
	}
	// Only the three broken servers: an error (the first one's), nothing cached.
	c2, _ := debuginfod.New(debuginfod.Options{URLs: urls[:3], CacheDir: cache})
	_, err = c2.Executable(context.Background(), []byte{8, 8, 8, 8})
	var de *debuginfod.Error
	if err == nil || errors.Is(err, debuginfod.ErrNotFound) || !errors.As(err, &de) || !strings.HasPrefix(de.URL, urls[0]+"/") {
		t.Errorf("broken servers: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "08080808", "*")); len(m) != 0 {
		t.Errorf("broken answers were cached: %v", m)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	if c, err := debuginfod.FromEnv(); c != nil || err != nil {
		t.Errorf("empty DEBUGINFOD_URLS: %v, %v; want nil, nil", c, err)
	}
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	t.Setenv("DEBUGINFOD_URLS", "  http://a.example/  https://b.example\t")
	t.Setenv("DEBUGINFOD_TIMEOUT", "5")
	c, err := debuginfod.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.URLs(), " "); got != "http://a.example https://b.example" {
		t.Errorf("URLs = %q", got)
	}
	if c.CacheDir() != "/tmp/xdg/sonde/debuginfod" {
		t.Errorf("CacheDir = %q", c.CacheDir())
	}
	t.Setenv("DEBUGINFOD_TIMEOUT", "soon")
	if _, err := debuginfod.FromEnv(); err == nil {
		t.Errorf("DEBUGINFOD_TIMEOUT=soon accepted")
	}
	t.Setenv("DEBUGINFOD_TIMEOUT", "")
	t.Setenv("DEBUGINFOD_URLS", "ftp://x")
	if _, err := debuginfod.FromEnv(); err == nil {
		t.Errorf("ftp URL accepted")
	}
	var nilClient *debuginfod.Client
	if _, err := nilClient.DebugInfo(context.Background(), []byte{1}); !errors.Is(err, debuginfod.ErrDisabled) {
		t.Errorf("nil client: %v", err)
	}
}

func TestSourceArguments(t *testing.T) {
	c, _ := debuginfod.New(debuginfod.Options{URLs: []string{"http://127.0.0.1:1"}, CacheDir: t.TempDir()})
	if _, err := c.Source(context.Background(), []byte{1, 2}, "relative/file.c"); err == nil {
		t.Errorf("relative source path accepted")
	}
	if _, err := c.DebugInfo(context.Background(), nil); err == nil {
		t.Errorf("empty build-id accepted")
	}
}

// TestStalledBody: headers arrive, then the body stops (Timeout), or
// trickles forever (MaxTime); neither holds the caller.
func TestStalledBody(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write([]byte("\x7fELF"))
		w.(http.Flusher).Flush()
		if r.URL.Path == "/buildid/01020304/debuginfo" { // stall
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		for { // trickle
			select {
			case <-release:
				return
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				w.Write([]byte{0})
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer ts.Close()
	c, err := debuginfod.New(debuginfod.Options{URLs: []string{ts.URL}, CacheDir: t.TempDir(),
		Timeout: 300 * time.Millisecond, MaxTime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct {
		id   []byte
		want string
	}{
		{[]byte{1, 2, 3, 4}, "sent nothing"},
		{[]byte{5, 6, 7, 8}, "longer than"},
	} {
		start := time.Now()
		_, err := c.DebugInfo(context.Background(), c2.id)
		if err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%x: %v, want %q", c2.id, err, c2.want)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("%x: took %v", c2.id, d)
		}
	}
}
