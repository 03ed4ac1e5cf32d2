package session

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"

	"github.com/sondedbg/sonde/modules"
)

// maxPrepared bounds the libraries PrepareSymbols follows.
const maxPrepared = 32

// PrepareSymbols opens the symbols of a program about to run and of the
// libraries it links (its DT_NEEDED entries, followed transitively and
// found as the dynamic linker would in its default places, RPATH,
// RUNPATH and env's LD_LIBRARY_PATH), and reads ahead what every first
// lookup in them needs (symbols.Binary.Prepare). A front end runs it in a
// goroutine of its own while a launched program starts, so that the first
// stop's stack finds them ready: the libraries are the files the stop's
// modules open (by their real path, as the kernel names mappings). A
// library it does not find, or finds elsewhere than the dynamic linker
// will, only costs the time to read it.
func (s *Session) PrepareSymbols(exe string, env []string) {
	paths := neededFiles(exe, env)
	for i, p := range paths {
		f, err := s.file(&modules.Module{Name: p, Path: p})
		if err != nil || f.binary == nil {
			continue
		}
		f.binary.Prepare(i == len(paths)-1) // the executable comes last
	}
}

// neededFiles returns exe and the libraries it needs, by real path, exe
// first, libraries breadth first.
func neededFiles(exe string, env []string) []string {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return nil
	}
	var ldPath []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			ldPath = filepath.SplitList(v)
		}
	}
	out := []string{real}
	seen := map[string]bool{real: true}
	for i := 0; i < len(out) && len(out) < maxPrepared; i++ {
		for _, lib := range needed(out[i], ldPath) {
			if !seen[lib] && len(out) < maxPrepared {
				seen[lib] = true
				out = append(out, lib)
			}
		}
	}
	// The libraries first: the executable's symbols are read anyway by the
	// client's breakpoints before the program runs.
	return append(out[1:], out[0])
}

// systemLibDirs are the dynamic linker's default places on x86-64 Linux
// (Debian's multiarch ones first).
var systemLibDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// needed returns the libraries path's DT_NEEDED entries name, found.
func needed(path string, ldPath []string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, err := f.ImportedLibraries()
	if err != nil || len(names) == 0 {
		return nil
	}
	origin := filepath.Dir(path)
	expand := func(list []string) []string {
		var dirs []string
		for _, l := range list {
			for _, d := range filepath.SplitList(l) {
				dirs = append(dirs, strings.NewReplacer("$ORIGIN", origin, "${ORIGIN}", origin).Replace(d))
			}
		}
		return dirs
	}
	runpath, _ := f.DynString(elf.DT_RUNPATH)
	var dirs []string
	if len(runpath) == 0 {
		rpath, _ := f.DynString(elf.DT_RPATH)
		dirs = append(dirs, expand(rpath)...)
	}
	dirs = append(dirs, ldPath...)
	dirs = append(dirs, expand(runpath)...)
	dirs = append(dirs, systemLibDirs...)
	var out []string
	for _, name := range names {
		cands := dirs
		if strings.Contains(name, "/") {
			cands = []string{""}
		}
		for _, d := range cands {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
				continue
			}
			if real, err := filepath.EvalSymlinks(p); err == nil {
				out = append(out, real)
				break
			}
		}
	}
	return out
}
