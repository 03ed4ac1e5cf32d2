package debuginfod

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzTransport answers every request with the fuzzed response, without a
// network, and records the URL asked for.
type fuzzTransport struct {
	status int
	clen   int64
	body   []byte
	asked  []string
}

func (f *fuzzTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.asked = append(f.asked, req.URL.String())
	return &http.Response{StatusCode: f.status, Status: http.StatusText(f.status), ContentLength: f.clen,
		Body: io.NopCloser(bytes.NewReader(f.body)), Header: http.Header{}, Request: req}, nil
}

// FuzzResponses: whatever a server answers (status, length header, body)
// and whatever build-id and source path are asked for, the client returns
// an error or a file inside its cache directory, no larger than MaxSize,
// an ELF file when one was asked for; it asks only under /buildid/HEX/;
// and evicting the artifact removes nothing outside the cache.
func FuzzResponses(f *testing.F) {
	elfBody := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 57)...)
	f.Add(uint16(200), int64(len(elfBody)), elfBody, []byte{0xab, 0xcd}, "", false)
	f.Add(uint16(200), int64(-1), []byte("int main() {}\n"), []byte{1, 2, 3, 4}, "/src/../../../etc/passwd", true)
	f.Add(uint16(200), int64(3), []byte("\x7fEL"), []byte{0xff}, "", false)
	f.Add(uint16(404), int64(0), []byte{}, []byte{0x01}, "/a b/%2e%2e/c", true)
	f.Add(uint16(200), int64(1<<40), elfBody, []byte{0x01}, "", false)
	f.Add(uint16(200), int64(10), elfBody, []byte{}, "/x", true)
	f.Add(uint16(302), int64(0), []byte{}, bytes.Repeat([]byte{7}, 300), strings.Repeat("/long-name", 40), true)
	f.Fuzz(func(t *testing.T, status uint16, clen int64, body, buildID []byte, src string, source bool) {
		if status < 100 || status > 999 {
			status = 200
		}
		root := t.TempDir()
		cache := filepath.Join(root, "cache")
		sentinel := filepath.Join(root, "sentinel")
		if err := os.WriteFile(sentinel, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		rt := &fuzzTransport{status: int(status), clen: clen, body: body}
		c, err := New(Options{URLs: []string{"http://fuzz.invalid"}, CacheDir: cache, MaxSize: 4096,
			NegativeTTL: -1, Timeout: time.Second, HTTPClient: &http.Client{Transport: rt}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var p, artifact string
		if source {
			p, err = c.Source(ctx, buildID, src)
			artifact = "source/" + strings.TrimPrefix(src, "/")
		} else {
			p, err = c.DebugInfo(ctx, buildID)
			artifact = "debuginfo"
		}
		for _, u := range rt.asked {
			if !strings.HasPrefix(u, "http://fuzz.invalid/buildid/") {
				t.Fatalf("asked %q", u)
			}
		}
		if err == nil {
			rel, rerr := filepath.Rel(cache, p)
			if rerr != nil || strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) != 1 {
				t.Fatalf("cached at %q, outside %q or not CACHE/ID/NAME", p, cache)
			}
			data, rerr := os.ReadFile(p)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if len(data) > 4096 {
				t.Fatalf("accepted %d bytes > MaxSize", len(data))
			}
			if !source && !bytes.HasPrefix(data, []byte("\x7fELF")) {
				t.Fatalf("accepted a debug file that is not ELF: %q", data[:min(len(data), 8)])
			}
		}
		c.Evict(buildID, artifact)
		if _, err := os.Stat(sentinel); err != nil {
			t.Fatalf("evicting %q removed a file outside the cache: %v", artifact, err)
		}
		if _, err := os.Stat(root); err != nil {
			t.Fatalf("evicting %q removed the cache's parent: %v", artifact, err)
		}
	})
}

// FuzzSourceCacheName: any source path gives one file name (no separator,
// no "." or "..", within NAME_MAX).
func FuzzSourceCacheName(f *testing.F) {
	f.Add("/usr/src/a.c")
	f.Add("/" + strings.Repeat("x/", 200))
	f.Add("/..")
	f.Fuzz(func(t *testing.T, p string) {
		n := sourceCacheName(p)
		if strings.ContainsRune(n, '/') || n == "." || n == ".." || len(n) > 255 || !strings.HasPrefix(n, "source-") {
			t.Fatalf("sourceCacheName(%q) = %q", p, n)
		}
	})
}
