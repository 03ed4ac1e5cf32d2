package session

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/variables"
)

// maxPrepared bounds the libraries PrepareSymbols follows.
const maxPrepared = 32

// PrepareSymbols opens the symbols of a program about to run and of the
// libraries its first stop's stack runs through, and reads ahead what
// every first lookup in them needs (symbols.Binary.Prepare). A front end
// runs it in a goroutine of its own while a launched program starts, so
// that the first stop's stack finds them ready: the files are the ones the
// stop's modules open (by their real path, as the kernel names mappings).
//
// What it reads, in this order, is what that stack needs whatever the
// program does: the C library (the start-up code at the bottom of every
// stack, __libc_start_call_main and __libc_start_main, whose unit index is
// most of a first stack's cost), then the executable, then the libraries
// the program brings along (outside the dynamic linker's default places:
// where a user's breakpoints are). The other system libraries (the
// dynamic linker, libm, libstdc++, libgcc_s) appear in a stack only when
// the program stops inside them; reading them ahead took longer than the
// start of the program (a C++ program's libm alone, 40 ms on a loaded
// machine), so a stop's lookups waited for the read-ahead to get past them,
// or competed with it for the two cores, and they are left to the lookups
// that need them. A library it does not find, or finds elsewhere than the
// dynamic linker will, only costs the time to read it.
//
// In the C library and the executable it also decodes the functions every
// stack runs through (startFunctions: their units' DIEs, scopes, line
// tables and call sites, and their call-frame information: the unwind
// tables, built and their rows decoded, which every module of the file
// shares; the first walk built them and faulted their pages in, ~0.5 ms
// of a C program's first stackTrace by a trace), and for the executable
// makes its variables Reader (variables.For: the stop's prefetch reads
// frame 0's variables) and indexes the functions of main's unit
// (variables.Reader.PrepareUnitAt: where a small program's breakpoints are):
// a first stop's walk and prefetch decoded them before its stackTrace and
// scopes could answer (12 ms of a C program's first round, by a trace).
func (s *Session) PrepareSymbols(exe string, env []string) {
	// The registers' index by DWARF number, which the first walk's first
	// register read built (its maps' new pages faulted in).
	arch.AMD64.ByDWARF(arch.DwarfRIP)
	for _, p := range prepareOrder(neededFiles(exe, env)) {
		f, err := s.file(&modules.Module{Name: p.path, Path: p.path})
		if err != nil || f.binary == nil {
			continue
		}
		f.binary.Prepare(p.exe)
		var lpcs []uint64
		for _, name := range startFunctions(p) {
			f.binary.PrepareFunction(name)
			if addr, _, ok := f.binary.FunctionAddress(name); ok && addr != 0 {
				lpcs = append(lpcs, addr)
			}
		}
		f.tables.Prepare(lpcs...)
		if p.exe && f.binary.HasDWARF() {
			if vr, err := variables.For(f.binary); err == nil && len(lpcs) > 0 {
				vr.PrepareUnitAt(lpcs[0]) // main's unit's function index
			}
		}
	}
}

// startFunctions names the functions of p that every stack of a program's
// main thread runs through: glibc's start-up code (__libc_start_call_main
// calls main since glibc 2.34, __libc_start_main before; musl's
// libc_start_main), and the executable's main and _start (the outermost
// frame, whose call-frame information ends the walk). Names a file does not
// define cost a symbol lookup.
func startFunctions(p prepared) []string {
	switch {
	case p.exe:
		return []string{"main", "_start"}
	case holdsStartCode(p.path):
		return []string{"__libc_start_call_main", "__libc_start_main", "libc_start_main"}
	}
	return nil
}

// prepared is one file PrepareSymbols reads.
type prepared struct {
	path string
	exe  bool
}

// prepareOrder picks from paths (neededFiles': libraries, then the
// executable last) the files PrepareSymbols reads, in the order the first
// stop needs them.
func prepareOrder(paths []string) []prepared {
	if len(paths) == 0 {
		return nil
	}
	exe, libs := paths[len(paths)-1], paths[:len(paths)-1]
	var out []prepared
	for _, p := range libs {
		if holdsStartCode(p) {
			out = append(out, prepared{path: p})
		}
	}
	out = append(out, prepared{path: exe, exe: true})
	for _, p := range libs {
		if !holdsStartCode(p) && !inSystemDir(p) {
			out = append(out, prepared{path: p})
		}
	}
	return out
}

// holdsStartCode reports whether path is the C library, whose start-up
// code is at the bottom of every thread's stack (glibc's libc.so.6; musl's
// C library is its dynamic linker, ld-musl-*.so.1).
func holdsStartCode(path string) bool {
	base := filepath.Base(path)
	return strings.HasPrefix(base, "libc.so") || strings.HasPrefix(base, "ld-musl-")
}

// inSystemDir reports whether path lies in one of the dynamic linker's
// default places (by real path: /lib is often a link to /usr/lib).
func inSystemDir(path string) bool {
	dir := filepath.Dir(path)
	for _, d := range systemLibDirs {
		if dir == d {
			return true
		}
		if real, err := filepath.EvalSymlinks(d); err == nil && dir == real {
			return true
		}
	}
	return false
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
