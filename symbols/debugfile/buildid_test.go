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
