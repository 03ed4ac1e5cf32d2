package debugfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindAltFile: a debug file whose .gnu_debugaltlink (as dwz writes it)
// names a supplementary file by a relative path and build-id.
func TestFindAltFile(t *testing.T) {
	needTool(t, "objcopy")
	dir := t.TempDir()
	_, debug := split(t, buildProg(t, "sym_dbg"), filepath.Join(dir, "a"))
	_, supp := split(t, buildProg(t, "sym_dbg_other", "-O2"), filepath.Join(dir, "dwz"))
	suppID, _ := BuildID(openELF(t, supp))

	link := append([]byte("../dwz/prog.debug\x00"), suppID...)
	os.WriteFile(filepath.Join(dir, "link"), link, 0o644)
	withAlt := filepath.Join(dir, "a", "with-alt.debug")
	run(t, "objcopy", "--add-section", ".gnu_debugaltlink="+filepath.Join(dir, "link"), debug, withAlt)

	f := openELF(t, withAlt)
	p, id, err := DebugAltLink(f)
	if err != nil || p != "../dwz/prog.debug" || string(id) != string(suppID) {
		t.Fatalf("DebugAltLink = %q %x %v", p, id, err)
	}
	alt, err := FindAltFile(ctx, withAlt, f, Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer alt.Close()
	if alt.Path != filepath.Join(dir, "dwz", "prog.debug") {
		t.Errorf("alt file %s", alt.Path)
	}

	// Moved away: found again through the build-id directory.
	h := hexString(suppID)
	moved := filepath.Join(dir, "debugdir", ".build-id", h[:2], h[2:]+".debug")
	copyFile(t, supp, moved)
	os.Remove(supp)
	alt2, err := FindAltFile(ctx, withAlt, f, Options{DebugDirs: []string{filepath.Join(dir, "debugdir")}})
	if err != nil || alt2.Path != moved {
		t.Fatalf("by build-id: %v %v", alt2, err)
	}
	alt2.Close()
	if !errors.Is(alt2.Tried[0].Err, fs.ErrNotExist) {
		t.Errorf("first attempt: %v", alt2.Tried[0].Err)
	}
	// Gone: an error naming the debug file.
	os.Remove(moved)
	if _, err := FindAltFile(ctx, withAlt, f, Options{DebugDirs: []string{}}); err == nil || !strings.Contains(err.Error(), withAlt) {
		t.Errorf("missing alt file: %v", err)
	}
	// No section: nothing to do.
	if a, err := FindAltFile(ctx, debug, openELF(t, debug), Options{}); a != nil || err != nil {
		t.Errorf("no altlink: %v %v", a, err)
	}
}

func TestDWPPath(t *testing.T) {
	dir := t.TempDir()
	bin, debug := filepath.Join(dir, "prog"), filepath.Join(dir, "d", "prog.debug")
	if DWPPath(bin, debug) != "" {
		t.Errorf("no .dwp anywhere, got one")
	}
	copyFile(t, "/dev/null", debug+".dwp")
	if DWPPath(bin, debug) != debug+".dwp" {
		t.Errorf("beside debug file not found")
	}
	os.WriteFile(bin+".dwp", nil, 0o644)
	if DWPPath(bin, debug) != bin+".dwp" {
		t.Errorf("beside binary should win")
	}
}

func FuzzParseDebugAltLink(f *testing.F) {
	f.Add([]byte("/usr/lib/debug/.dwz/x86_64-linux-gnu/libc6.debug\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14"))
	f.Add([]byte("\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, id, err := ParseDebugAltLink(data)
		if err == nil && (p == "" || len(id) == 0 || len(p)+1+len(id) != len(data)) {
			t.Fatalf("inconsistent parse %q %x of %d bytes", p, id, len(data))
		}
	})
}
