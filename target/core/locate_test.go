package core

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocateFile checks the file the symbols layer is given for a mapped
// file of a kernel core: the recorded path when the file there is the one the
// process mapped, the executable option when it was moved, and an error (a
// problem reported once) when the file is gone or is another build.
func TestLocateFile(t *testing.T) {
	requireFileCores(t)
	data, err := os.ReadFile(buildTarget(t))
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "core_target")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startTarget(t, exe, 0)
	p.allowCore(t, 0x33)
	if _, err := p.stdin.Write([]byte("fault 2\n")); err != nil {
		t.Fatal(err)
	}
	corePath := p.waitCore(t)

	_, c := openCore(t, corePath, Options{})
	if got, err := c.Process().LocateFile(exe); got != exe || err != nil {
		t.Errorf("LocateFile(%s) = %q, %v; want the recorded path", exe, got, err)
	}
	if got, err := c.Process().LocateFile(exe + " (deleted)"); got != exe || err != nil {
		t.Errorf("LocateFile of the deleted spelling = %q, %v", got, err)
	}
	if _, err := c.Process().LocateFile("/not/mapped"); err == nil {
		t.Error("LocateFile of a path the core does not map: no error")
	}

	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(exe, moved); err != nil {
		t.Fatal(err)
	}
	_, c = openCore(t, corePath, Options{Executable: moved})
	if got, err := c.Process().LocateFile(exe); got != moved || err != nil {
		t.Errorf("moved: LocateFile = %q, %v; want %s", got, err, moved)
	}
	_, c = openCore(t, corePath, Options{})
	var missing *FileMissingError
	if got, err := c.Process().LocateFile(exe); got != "" || !errors.As(err, &missing) {
		t.Errorf("gone: LocateFile = %q, %v", got, err)
	}

	// Another build at the recorded path (a different ELF file).
	other, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(exe, other, 0o755); err != nil {
		t.Fatal(err)
	}
	_, c = openCore(t, corePath, Options{})
	for i := 0; i < 2; i++ {
		var changed *FileChangedError
		if got, err := c.Process().LocateFile(exe); got != "" || !errors.As(err, &changed) || changed.Path != exe ||
			!strings.Contains(err.Error(), "build-id") {
			t.Errorf("rebuilt: LocateFile = %q, %v", got, err)
		}
	}
	n := 0
	for _, pr := range c.Problems() {
		if pr.Path == exe && (pr.Kind == ProblemFileChanged || pr.Kind == ProblemFileMissing) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d problems about %s, want 1: %v", n, exe, c.Problems())
	}
}
