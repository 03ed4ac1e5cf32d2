package core

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sondedbg/sonde/target"
)

// kernelCore runs core_target, snapshots it, and has the kernel dump it with
// the given coredump_filter after SIGQUIT to its second worker.
func kernelCore(t *testing.T, filter uint32) (p *liveProc, maps []liveMap, samples []sample, core string) {
	t.Helper()
	requireFileCores(t)
	p = startTarget(t, buildTarget(t), 0)
	p.allowCore(t, filter)
	maps = readMaps(t, p.pid)
	samples = sampleMemory(t, p.pid, maps, p.exe, 1000, rand.New(rand.NewSource(int64(filter))))
	core = p.killForCore(t, syscall.SIGQUIT, p.tids[1])
	return p, maps, samples, core
}

// TestKernelCore checks kernel-written cores under several coredump_filter
// settings against the live process: threads, signal, registers (against gdb
// reading the same core, and ymm8 against the values the program loaded),
// the memory map against /proc/PID/maps, and 1,000 sampled addresses across
// text, data, heap, stacks, the vDSO and libraries against /proc/PID/mem.
func TestKernelCore(t *testing.T) {
	cases := []struct {
		filter uint32
		// kinds of mapping whose samples may be unavailable
		mayMiss string
		// text is read from the executable, not the core
		textFromFile bool
	}{
		{0x33, "", true},                         // the default: anonymous memory and ELF header pages
		{0x3f, "", false},                        // everything, file-backed text included
		{0x23, "", true},                         // no ELF header pages: no build-ids in the core
		{0x32, "heap stack anon data lib", true}, // no anonymous private memory
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("filter=0x%x", tc.filter), func(t *testing.T) {
			p, maps, samples, corePath := kernelCore(t, tc.filter)
			tg, c := openCore(t, corePath, Options{})
			proc := c.Process()
			checkThreads(t, c, p)
			checkSignal(t, c, p.tids[1], target.ReasonSignal, syscall.SIGQUIT)
			if tgs := tg.Processes(); len(tgs) != 1 || tgs[0] != proc {
				t.Errorf("target processes %v", tgs)
			}
			requireGDB(t)
			checkRegisters(t, c, p, gdbRegisters(t, p.exe, corePath))
			checkMap(t, proc, maps, true)
			missing := checkMemory(t, proc, samples)
			if tc.filter != 0x32 {
				checkAgainstGDB(t, proc, p.exe, corePath, samples[:200])
			}
			for kind, n := range missing {
				if !strings.Contains(tc.mayMiss, kind) {
					t.Errorf("%d %s samples unavailable", n, kind)
				}
			}
			if tc.filter == 0x32 && missing["heap"] == 0 {
				t.Errorf("coredump_filter 0x32 leaves out the heap, yet every heap read succeeded")
			}
			warned := false
			for _, pr := range c.Problems() {
				switch {
				case pr.Kind == ProblemMissingInfo && tc.filter == 0x32 && strings.Contains(pr.Err.Error(), "no written private memory"):
					warned = true
				case pr.Kind != ProblemNotDumped:
					t.Errorf("unexpected problem: %v", pr)
				}
			}
			if tc.filter == 0x32 && !warned {
				t.Errorf("no warning that the core lacks written private memory: %v", c.Problems())
			}
			exe := findMapped(c, p.exe)
			if exe == nil || exe.Found != p.exe {
				t.Fatalf("executable not resolved: %+v", exe)
			}
			if hasHeaders := tc.filter&0x10 != 0; (exe.BuildID != nil) != hasHeaders {
				t.Errorf("filter 0x%x: build-id %x read from the core", tc.filter, exe.BuildID)
			}
			if tc.textFromFile {
				checkTextFromFile(t, c, p)
			}
			if tc.filter == 0x3f {
				// Everything is in the core: no file is needed, none is
				// reported missing, every sample reads.
				_, c := openCore(t, corePath, Options{Sysroot: t.TempDir()})
				if missing := checkMemory(t, c.Process(), samples); len(missing) != 0 {
					t.Errorf("unavailable without files: %v", missing)
				}
				if pr := c.Problems(); len(pr) != 0 {
					t.Errorf("problems without files: %v", pr)
				}
				if exe := c.Executable(); exe == nil || exe.Needed || exe.Found != "" {
					t.Errorf("executable %+v", exe)
				}
			}
			if tc.filter == 0x33 {
				testMissingFiles(t, corePath, p, samples)
				testTruncated(t, corePath, samples)
			}
		})
	}
}

func findMapped(c *Core, path string) *MappedFile {
	for _, mf := range c.MappedFiles() {
		if mf.Path == path {
			return mf
		}
	}
	return nil
}

// checkSignal checks that tid is the thread stopped by the signal and the
// others are stopped with it.
func checkSignal(t *testing.T, c *Core, tid int, kind target.ReasonKind, sig syscall.Signal) {
	t.Helper()
	for _, th := range c.Process().Children() {
		state, r, _ := th.State()
		if state != target.StateStopped || r == nil {
			t.Fatalf("%s: state %v reason %v", th, state, r)
		}
		if th.TID() == tid {
			if r.Kind != kind || r.Signal != target.Signal(sig) {
				t.Errorf("%s: reason %v %v, want %v %v", th, r.Kind, r.Signal.Name(), kind, target.Signal(sig).Name())
			}
		} else if r.Kind != target.ReasonContainer {
			t.Errorf("%s: reason %v, want Container", th, r.Kind)
		}
	}
	if first := c.Threads()[0]; first.TID != tid {
		t.Errorf("first NT_PRSTATUS is thread %d, the kernel writes the signalled %d first", first.TID, tid)
	}
}

// checkTextFromFile checks that the executable's text is not in the core
// (so the samples that read it exercised the file path).
func checkTextFromFile(t *testing.T, c *Core, p *liveProc) {
	t.Helper()
	for _, s := range c.Segments() {
		if s.Type == ptLoad && s.Flags&pfX != 0 && s.FileSize > 0 && s.Vaddr < p.vars["data"] && p.vars["data"]-s.Vaddr < 1<<24 {
			t.Errorf("executable text 0x%x is in the core (p_filesz 0x%x); the test means to read it from the file", s.Vaddr, s.FileSize)
		}
	}
}

// testMissingFiles opens the core with the files hidden, found elsewhere,
// found by build-id and replaced by a different build.
func testMissingFiles(t *testing.T, corePath string, p *liveProc, samples []sample) {
	empty := t.TempDir()
	t.Run("sysroot-empty", func(t *testing.T) {
		_, c := openCore(t, corePath, Options{Sysroot: empty})
		missing := checkMemory(t, c.Process(), samples)
		if missing["text"] == 0 || missing["lib"] == 0 {
			t.Errorf("with no files, text and library reads should fail; unavailable: %v", missing)
		}
		mf := findMapped(c, p.exe)
		var fm *FileMissingError
		if mf == nil || mf.Found != "" || !errors.As(mf.Err, &fm) {
			t.Errorf("executable: %+v", mf)
		}
		if !hasProblem(c, ProblemFileMissing, p.exe) {
			t.Errorf("problems do not say %s is missing: %v", p.exe, c.Problems())
		}
		buf := make([]byte, 4)
		_, err := c.Process().ReadMemory(textAddr(t, c, p.exe), buf)
		var miss *MissingError
		if !errors.As(err, &miss) || !miss.Mapped || !strings.Contains(miss.Reason, "not found") {
			t.Errorf("text read: %v", err)
		}
	})
	t.Run("search-path", func(t *testing.T) {
		dir := t.TempDir()
		copyFile(t, p.exe, filepath.Join(dir, filepath.Base(p.exe)))
		_, c := openCore(t, corePath, Options{Sysroot: empty, SearchPath: []string{dir}})
		if mf := findMapped(c, p.exe); mf == nil || mf.How != "search path" {
			t.Errorf("executable: %+v", mf)
		}
		checkMemoryKinds(t, c, samples, "text")
	})
	t.Run("build-id", func(t *testing.T) {
		var asked []byte
		_, c := openCore(t, corePath, Options{Sysroot: empty, FindByBuildID: func(id []byte) string {
			if asked == nil {
				asked = id
				return p.exe
			}
			return ""
		}})
		if mf := findMapped(c, p.exe); mf == nil || mf.How != "build-id" || string(mf.BuildID) != string(asked) {
			t.Errorf("executable: %+v", mf)
		}
		checkMemoryKinds(t, c, samples, "text")
	})
	t.Run("changed", func(t *testing.T) {
		// A sysroot whose copy of the executable is another build.
		root := t.TempDir()
		other := buildOther(t)
		copyFile(t, other, filepath.Join(root, p.exe))
		_, c := openCore(t, corePath, Options{Sysroot: root})
		mf := findMapped(c, p.exe)
		var fc *FileChangedError
		if mf == nil || mf.Found != "" || !errors.As(mf.Err, &fc) || !strings.Contains(fc.Reason, "build-id") {
			t.Errorf("executable: %+v", mf)
		}
		if !hasProblem(c, ProblemFileChanged, p.exe) {
			t.Errorf("problems do not say %s changed: %v", p.exe, c.Problems())
		}
		missing := checkMemory(t, c.Process(), samples)
		if missing["text"] == 0 {
			t.Errorf("text was read from a different build")
		}
	})
}

// checkMemoryKinds checks that every sample of the given kind reads right.
func checkMemoryKinds(t *testing.T, c *Core, samples []sample, kind string) {
	t.Helper()
	var some []sample
	for _, s := range samples {
		if s.kind == kind {
			some = append(some, s)
		}
	}
	for _, s := range some {
		buf := make([]byte, len(s.want))
		if _, err := c.Process().ReadMemory(s.addr, buf); err != nil || string(buf) != string(s.want) {
			t.Errorf("%s 0x%x: %x %v, live %x", kind, s.addr, buf, err, s.want)
		}
	}
}

func hasProblem(c *Core, kind ProblemKind, path string) bool {
	for _, pr := range c.Problems() {
		if pr.Kind == kind && pr.Path == path {
			return true
		}
	}
	return false
}

// textAddr returns an address in the executable's text.
func textAddr(t *testing.T, c *Core, exe string) uint64 {
	m, _ := c.Process().MemoryMap()
	for _, r := range m {
		if r.FileName == exe && r.Perm&target.PermExec != 0 {
			return r.Addr + 16
		}
	}
	t.Fatalf("no text region of %s", exe)
	return 0
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestKernelCoreDeletedExecutable dumps a process whose executable was
// deleted while it ran: NT_FILE records "PATH (deleted)". The text must then
// come from Options.Executable (or the search path), and without either must
// be reported missing, never read from whatever now sits at PATH.
func TestKernelCoreDeletedExecutable(t *testing.T) {
	requireFileCores(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "core_target")
	copyFile(t, buildTarget(t), exe)
	p := startTarget(t, exe, 0)
	p.allowCore(t, 0x33)
	maps := readMaps(t, p.pid)
	samples := sampleMemory(t, p.pid, maps, exe, 300, rand.New(rand.NewSource(3)))
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	// Another build now sits at the old path.
	copyFile(t, buildOther(t), exe)
	corePath := p.killForCore(t, syscall.SIGQUIT, p.tids[0])

	_, c := openCore(t, corePath, Options{})
	mf := findMapped(c, exe)
	if mf == nil || !mf.Deleted || mf.Found != "" {
		t.Fatalf("deleted executable: %+v", mf)
	}
	if missing := checkMemory(t, c.Process(), samples); missing["text"] == 0 {
		t.Errorf("text read from the other build at %s", exe)
	}

	keep := filepath.Join(t.TempDir(), "saved")
	copyFile(t, buildTarget(t), keep)
	for name, opts := range map[string]Options{
		"executable option": {Executable: keep},
		"search path":       {Sysroot: t.TempDir(), SearchPath: []string{filepath.Dir(buildTarget(t))}},
	} {
		_, c := openCore(t, corePath, opts)
		if mf := findMapped(c, exe); mf == nil || mf.How != name {
			t.Errorf("%s: %+v", name, mf)
		}
		checkMemoryKinds(t, c, samples, "text")
	}
}
