package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/procmaps"
	"github.com/sondedbg/sonde/variables"
)

// PrepareProcess reads ahead the symbols that every stack of the live
// process pid needs, whatever its threads are doing: those of its C library
// (each thread's stack ends there, in start_thread and clone3 or in
// __libc_start_call_main) and of its executable (main). It reads the
// process's memory map itself and needs no attach, so a front end runs it
// in a goroutine of its own while it attaches: on a machine without a
// persisted cache (the first `sonde stack`), the C library's compressed
// debug sections are then inflated, and its units indexed, while the
// threads are being stopped and unwound, instead of after the first frame
// asks for them. The files are the ones the stack's modules open (a live
// process's modules are read from the paths its memory map names), so
// nothing is read twice; a file it cannot read is left for the lookups to
// report. With vars, it also makes their variables Readers (which frame
// arguments are read with: variables.For), once their units are indexed,
// while the stack's first frames are symbolized. It returns when both
// files are prepared.
func (s *Session) PrepareProcess(pid int, vars bool) {
	maps, err := procmaps.ReadPID(pid)
	if err != nil {
		return
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	var paths []string
	seen := map[string]bool{}
	for i := range maps {
		m := &maps[i]
		p, deleted := m.Path()
		if !m.Exec || p == "" || deleted || seen[p] {
			continue
		}
		if p == exe || isCLibrary(p) {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	// One goroutine a file: the C library's index waits for its largest
	// section to inflate, which the executable's need not.
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := s.file(&modules.Module{Name: p, Path: p})
			if err == nil && f.binary != nil {
				f.binary.Prepare(false)
				if vars && f.binary.HasDWARF() {
					variables.For(f.binary)
				}
			}
		}()
	}
	wg.Wait()
}

// isCLibrary reports whether path names glibc's C library (libc.so.6).
func isCLibrary(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "libc.so")
}
