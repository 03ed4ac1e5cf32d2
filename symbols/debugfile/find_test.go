package debugfile

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

var ctx = context.Background()

func TestFindInBinary(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	f := openELF(t, bin)
	r, err := Find(ctx, bin, f, Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Method != MethodBinary || r.File != f || !r.HasDWARF || r.Hint() != "" {
		t.Fatalf("got method %v file %v dwarf %v hint %q", r.Method, r.File == f, r.HasDWARF, r.Hint())
	}
	if len(r.BuildID) != 20 {
		t.Errorf("build-id %x, want 20 bytes", r.BuildID)
	}
	// readelf agrees on the build-id.
	if _, err := exec.LookPath("readelf"); err == nil {
		out := run(t, "readelf", "-n", bin)
		if !strings.Contains(out, "Build ID: "+hex.EncodeToString(r.BuildID)) {
			t.Errorf("readelf -n does not show build-id %x:\n%s", r.BuildID, out)
		}
	}
}

func TestFindByBuildID(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	tmp := t.TempDir()
	stripped, debug := split(t, bin, filepath.Join(tmp, "bin"))
	f := openELF(t, stripped)
	id, err := BuildID(f)
	if err != nil || id == nil {
		t.Fatalf("BuildID: %x, %v", id, err)
	}
	h := hex.EncodeToString(id)
	empty, dbgdir := filepath.Join(tmp, "empty"), filepath.Join(tmp, "debug")
	want := filepath.Join(dbgdir, ".build-id", h[:2], h[2:]+".debug")
	copyFile(t, debug, want)

	r, err := Find(ctx, stripped, f, Options{DebugDirs: []string{empty, dbgdir}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Method != MethodBuildID || r.Path != want || !r.HasDWARF {
		t.Fatalf("Find = %v %s (tried %v)", r.Method, r.Path, r.Tried)
	}
	if !hasFunction(t, r.File, "sym_global_func") {
		t.Errorf("found debug file has no DWARF for sym_global_func")
	}
	if err := attemptErr(r, MethodBuildID, filepath.Join(empty, ".build-id", h[:2], h[2:]+".debug")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("first debug dir: attempt error %v, want not-exist", err)
	}
	if len(r.Problems()) != 0 {
		t.Errorf("problems: %v", r.Problems())
	}

	// Another build's debug file at that path is rejected by build-id.
	other := buildProg(t, "sym_dbg_other", "-O2")
	_, otherDebug := split(t, other, filepath.Join(tmp, "other"))
	copyFile(t, otherDebug, want)
	r2, _ := Find(ctx, stripped, f, Options{DebugDirs: []string{dbgdir}})
	defer r2.Close()
	if r2.File != nil {
		t.Fatalf("a mismatched debug file was accepted: %s", r2.Path)
	}
	if err := attemptErr(r2, MethodBuildID, want); !errors.Is(err, ErrBuildIDMismatch) || !strings.Contains(err.Error(), want) {
		t.Errorf("mismatch: attempt error %v", err)
	}
	if len(r2.Problems()) != 1 {
		t.Errorf("problems: %v", r2.Problems())
	}
	if hint := r2.Hint(); !strings.Contains(hint, stripped) || !strings.Contains(hint, h[2:]+".debug") || !strings.Contains(hint, "DEBUGINFOD_URLS") {
		t.Errorf("hint %q", hint)
	}

	// A truncated debug file: an error naming it, and the search goes on.
	data, _ := os.ReadFile(debug)
	os.WriteFile(want, data[:len(data)/3], 0o644)
	r3, _ := Find(ctx, stripped, f, Options{DebugDirs: []string{dbgdir}})
	defer r3.Close()
	if err := attemptErr(r3, MethodBuildID, want); err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), want) {
		t.Errorf("truncated: attempt error %v", err)
	}
}

// addDebugLink makes a stripped binary whose .gnu_debuglink names debug.
func addDebugLink(t *testing.T, bin, dir string) (linked, debug string) {
	t.Helper()
	stripped, debug := split(t, bin, dir)
	linked = filepath.Join(dir, "linked")
	// objcopy computes the CRC from the debug file as it is now.
	run(t, "objcopy", "--add-gnu-debuglink="+debug, stripped, linked)
	os.Remove(stripped)
	return linked, debug
}

func TestFindByDebugLink(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	for _, where := range []string{"beside", ".debug", "debugdir"} {
		t.Run(where, func(t *testing.T) {
			tmp := t.TempDir()
			bindir := filepath.Join(tmp, "bin")
			linked, debug := addDebugLink(t, bin, bindir)
			dbgdir := filepath.Join(tmp, "usr-lib-debug")
			var want string
			switch where {
			case "beside":
				want = debug
			case ".debug":
				want = filepath.Join(bindir, ".debug", "prog.debug")
			case "debugdir":
				want = filepath.Join(dbgdir, bindir, "prog.debug")
			}
			if want != debug {
				copyFile(t, debug, want)
				os.Remove(debug)
			}
			f := openELF(t, linked)
			name, crc, err := DebugLink(f)
			if err != nil || name != "prog.debug" {
				t.Fatalf("DebugLink = %q %#x %v", name, crc, err)
			}
			if got, _ := CRC32File(want); got != crc {
				t.Fatalf("CRC32File = %#x, objcopy recorded %#x", got, crc)
			}
			r, err := Find(ctx, linked, f, Options{DebugDirs: []string{dbgdir}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Method != MethodDebugLink || r.Path != want || !hasFunction(t, r.File, "sym_static_func") {
				t.Fatalf("Find = %v %q, want debuglink %s (tried %v)", r.Method, r.Path, want, r.Tried)
			}
		})
	}
}

// TestDebugLinkWrongCRC: a debug file of another build under the linked
// name is rejected, as gdb rejects it.
func TestDebugLinkWrongCRC(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	tmp := t.TempDir()
	linked, debug := addDebugLink(t, bin, tmp)
	_, otherDebug := split(t, buildProg(t, "sym_dbg_other", "-O2"), filepath.Join(tmp, "other"))
	good, _ := os.ReadFile(debug)
	copyFile(t, otherDebug, debug)

	f := openELF(t, linked)
	r, _ := Find(ctx, linked, f, Options{DebugDirs: []string{}})
	defer r.Close()
	if r.File != nil {
		t.Fatalf("debug file with the wrong CRC accepted")
	}
	err := attemptErr(r, MethodDebugLink, debug)
	if !errors.Is(err, ErrCRCMismatch) || !strings.Contains(err.Error(), debug) {
		t.Fatalf("attempt error %v, want a CRC mismatch naming %s", err, debug)
	}

	if _, err := exec.LookPath("gdb"); err == nil {
		out, _ := gdbtest.Run("-ex", "info line sym_global_func", linked)
		if !strings.Contains(string(out), "CRC mismatch") {
			t.Errorf("gdb did not report a CRC mismatch either:\n%s", out)
		}
		os.WriteFile(debug, good, 0o644)
		out, _ = gdbtest.Run("-ex", "info line sym_global_func", linked)
		if !strings.Contains(string(out), "sym_plt.c") {
			t.Errorf("gdb did not use the right debug file:\n%s", out)
		}
		r2, _ := Find(ctx, linked, f, Options{DebugDirs: []string{}})
		defer r2.Close()
		if r2.Method != MethodDebugLink {
			t.Errorf("restored debug file not found: %v", r2.Tried)
		}
	}
}

// TestDebugLinkToItself: a debuglink naming the binary's own file must not
// make the stripped binary its own debug file.
func TestDebugLinkToItself(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	tmp := t.TempDir()
	stripped, _ := split(t, bin, filepath.Join(tmp, "a"))
	self := filepath.Join(tmp, "b", "prog")
	copyFile(t, stripped, filepath.Join(tmp, "c", "prog"))
	os.MkdirAll(filepath.Join(tmp, "b"), 0o755)
	run(t, "objcopy", "--add-gnu-debuglink="+filepath.Join(tmp, "c", "prog"), stripped, filepath.Join(tmp, "b", "x"))
	os.Rename(filepath.Join(tmp, "b", "x"), self)
	r, _ := Find(ctx, self, openELF(t, self), Options{DebugDirs: []string{}})
	defer r.Close()
	if r.File != nil || !errors.Is(attemptErr(r, MethodDebugLink, self), ErrSameFile) {
		t.Errorf("self link: file %v, tried %v", r.Path, r.Tried)
	}
}
