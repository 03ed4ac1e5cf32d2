package debugfile

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/symbols/debuginfod"
)

// TestBuildIDFromSegments: an image without section headers (as a module
// read back from memory can be) still yields its build-id via PT_NOTE.
func TestBuildIDFromSegments(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	want, err := BuildID(openELF(t, bin))
	if err != nil || want == nil {
		t.Fatalf("BuildID: %x %v", want, err)
	}
	data, _ := os.ReadFile(bin)
	binary.LittleEndian.PutUint64(data[0x28:], 0) // e_shoff
	binary.LittleEndian.PutUint16(data[0x3c:], 0) // e_shnum
	binary.LittleEndian.PutUint16(data[0x3e:], 0) // e_shstrndx
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Sections) != 0 {
		t.Fatalf("still %d sections", len(f.Sections))
	}
	got, err := BuildID(f)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("BuildID from PT_NOTE = %x, %v; want %x", got, err, want)
	}
}

// TestDebuginfodWrongFile: a server that answers with another build's
// debug file is caught by the build-id check, and the bad file is evicted
// from the cache so it is not trusted next time.
func TestDebuginfodWrongFile(t *testing.T) {
	dir := t.TempDir()
	stripped, _ := split(t, buildProg(t, "sym_dbg"), filepath.Join(dir, "a"))
	_, otherDebug := split(t, buildProg(t, "sym_dbg_other", "-O2"), filepath.Join(dir, "b"))
	wrong, _ := os.ReadFile(otherDebug)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(wrong) }))
	defer ts.Close()
	cache := filepath.Join(dir, "cache")
	c, err := debuginfod.New(debuginfod.Options{URLs: []string{ts.URL}, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	f := openELF(t, stripped)
	r, err := Find(context.Background(), stripped, f, Options{DebugDirs: []string{}, Debuginfod: c})
	if err != nil {
		t.Fatal(err)
	}
	if r.File != nil {
		t.Fatalf("wrong debuginfod file accepted")
	}
	last := r.Tried[len(r.Tried)-1]
	if last.Method != MethodDebuginfod || !errors.Is(last.Err, ErrBuildIDMismatch) {
		t.Errorf("last attempt %+v", last)
	}
	if _, err := os.Stat(last.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mismatched download still cached at %s", last.Path)
	}
}

// patchSectionSize writes a copy of path whose section header for section
// claims size bytes.
func patchSectionSize(t *testing.T, path, section string, size uint64) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := openELF(t, path)
	idx := -1
	for i, s := range f.Sections {
		if s.Name == section {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("%s has no %s", path, section)
	}
	shoff := binary.LittleEndian.Uint64(data[0x28:])
	binary.LittleEndian.PutUint64(data[shoff+uint64(idx)*64+0x20:], size)
	out := filepath.Join(t.TempDir(), "lying"+section)
	if err := os.WriteFile(out, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLyingSectionSizes: section headers that claim absurd sizes give
// errors that name the binary and the section, without allocating them.
func TestLyingSectionSizes(t *testing.T) {
	dir := t.TempDir()
	linked, _ := addDebugLink(t, buildProg(t, "sym_dbg"), dir)
	mini := makeMiniDebugInfo(t, buildProg(t, "sym_dbg"), t.TempDir())
	for _, c := range []struct {
		bin, section string
		method       Method
	}{
		{linked, ".note.gnu.build-id", MethodBuildID},
		{linked, ".gnu_debuglink", MethodDebugLink},
		{mini, ".gnu_debugdata", MethodMiniDebugInfo},
	} {
		for _, size := range []uint64{1 << 40, 3} {
			bad := patchSectionSize(t, c.bin, c.section, size)
			f, err := elf.Open(bad)
			if err != nil {
				t.Logf("%s size %d: rejected by debug/elf already: %v", c.section, size, err)
				continue
			}
			r, err := Find(context.Background(), bad, f, Options{DebugDirs: []string{}})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			e := attemptErr(r, c.method, bad)
			if e == nil || !strings.Contains(e.Error(), bad) {
				t.Errorf("%s claiming %d bytes: attempt error %v, want one naming %s", c.section, size, e, bad)
			}
		}
	}
}
