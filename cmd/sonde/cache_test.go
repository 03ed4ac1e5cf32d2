package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/pcache"
)

// rawClient contributes one section to a cache file.
type rawClient struct{ data []byte }

func (c rawClient) ID() pcache.ClientID { return pcache.ClientID{Name: "test", Version: 1} }
func (c rawClient) Size(*pcache.PersistContext) ([]pcache.SectionSpec, any, error) {
	return []pcache.SectionSpec{{Name: "s", Size: int64(len(c.data)), Align: 8}}, nil, nil
}
func (c rawClient) Persist(_ *pcache.PersistContext, _ int, w io.Writer, _ any) error {
	_, err := w.Write(c.data)
	return err
}
func (c rawClient) Resurrect(*pcache.File, []pcache.Section) error { return nil }

// TestCacheVerb lists, verifies and clears a cache with one good and one
// corrupt file.
func TestCacheVerb(t *testing.T) {
	dir := t.TempDir()
	c := &pcache.Cache{Dir: filepath.Join(dir, "pcache")}
	id := pcache.Identity{BuildID: []byte{0xab, 0xcd}, Size: 1, ModTime: 2}
	for _, key := range []string{"good", "bad"} {
		if err := c.Store(key, id, rawClient{[]byte("payload!")}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(c.Path("bad"))
	b[len(b)-1] ^= 0xff // the footer
	os.WriteFile(c.Path("bad"), b, 0o600)
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(sondeCLI(t), append([]string{"cache"}, args...)...)
		cmd.Env = append(os.Environ(), "SONDE_CACHE_DIR="+dir, "SONDE_NO_CACHE=")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return out.String(), errOut.String(), code
	}
	out, _, code := run("list")
	if code != 0 || !strings.Contains(out, "2 files") || !strings.Contains(out, "abcd") || !strings.Contains(out, "REJECTED") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	out, errOut, code := run("verify")
	if code != 1 || !strings.Contains(errOut, "1 of 2 files") {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = run("clear")
	if code != 0 || !strings.Contains(out, "removed 2 files") {
		t.Errorf("clear: exit %d %s", code, out)
	}
	if out, _, code := run("list", "--json"); code != 0 || !strings.Contains(out, `"files": []`) {
		t.Errorf("list --json after clear: exit %d %s", code, out)
	}
	if _, _, code := run("prune"); code != 2 {
		t.Errorf("unknown action: exit %d, want 2", code)
	}
}
