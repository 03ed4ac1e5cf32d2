package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sondedbg/sonde/symbols/jitmap"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

// Code in no file: JIT compilers write it into anonymous executable memory.
// The unwinder asks whether a return address lies in executable memory
// (unwind.CodeChecker) before it takes a frame there, and symbolization names
// such code from the perf map and jitdump files the runtime writes.

// IsCode implements unwind.CodeChecker from the process's memory map, read
// once per walk and only when the walk meets an address in no module.
func (c *threadCallbacks) IsCode(addr uint64) bool {
	if !c.execLoaded {
		c.execLoaded = true
		c.exec = c.exec[:0]
		if regions, err := c.thread.Process().MemoryMap(); err == nil {
			for _, r := range regions {
				if r.Perm&target.PermExec != 0 {
					c.exec = append(c.exec, r)
				}
			}
		}
	}
	for _, r := range c.exec {
		if r.Contains(addr) {
			return true
		}
	}
	return false
}

// appendJIT appends the JIT symbol covering pc, if the runtime named it.
func (c *threadCallbacks) appendJIT(dst []unwind.Symbol, pc uint64) []unwind.Symbol {
	st := jitExt.Get(c.thread.Process())
	if s, ok := st.lookup(c.thread.Process(), pc); ok {
		dst = append(dst, unwind.Symbol{Function: s.Name, FuncStart: s.Start})
	}
	return dst
}

// JITSymbol returns the name a JIT runtime gave the code at pc in proc's
// perf map or jitdump file, and the start of that code.
func (s *Session) JITSymbol(proc *target.Context, pc uint64) (name string, start uint64, ok bool) {
	sym, ok := jitExt.Get(proc.Process()).lookup(proc.Process(), pc)
	return sym.Name, sym.Start, ok
}

var jitExt = target.NewExtension[jitState]()

// jitState holds a process's JIT symbol files, parsed again when they grow
// (the runtime appends as it compiles), at most once per jitRecheck.
type jitState struct {
	mu      sync.Mutex
	checked time.Time
	files   map[string]*jitFile
}

type jitFile struct {
	size  int64
	mtime time.Time
	tab   *jitmap.Table
}

const jitRecheck = 100 * time.Millisecond

// maxJITFile bounds the size of a perf map or jitdump file sonde reads.
const maxJITFile = 256 << 20

func (st *jitState) lookup(proc *target.Context, pc uint64) (jitmap.Symbol, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if now := time.Now(); st.files == nil || now.Sub(st.checked) > jitRecheck {
		st.checked = now
		st.refresh(proc)
	}
	var best jitmap.Symbol
	found := false
	for _, f := range st.files {
		if s, ok := f.tab.Lookup(pc); ok && (!found || s.Start > best.Start) {
			best, found = s, true
		}
	}
	return best, found
}

// jitFiles lists the files that may name proc's JIT code: perf's
// /tmp/perf-PID.map, and jitdump files — mapped by the runtime so that perf
// record sees them (perf's convention), or in /tmp (.NET's default).
func jitFiles(proc *target.Context) []string {
	pid := proc.PID()
	files := []string{fmt.Sprintf("/tmp/perf-%d.map", pid), fmt.Sprintf("/tmp/jit-%d.dump", pid)}
	if regions, err := proc.MemoryMap(); err == nil {
		for _, r := range regions {
			base := filepath.Base(r.FileName)
			if strings.HasPrefix(base, "jit-") && strings.HasSuffix(base, ".dump") && r.FileName != files[1] {
				files = append(files, r.FileName)
			}
		}
	}
	return files
}

func (st *jitState) refresh(proc *target.Context) {
	if st.files == nil {
		st.files = map[string]*jitFile{}
	}
	for _, path := range jitFiles(proc) {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxJITFile {
			delete(st.files, path)
			continue
		}
		if f := st.files[path]; f != nil && f.size == fi.Size() && f.mtime.Equal(fi.ModTime()) {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var tab *jitmap.Table
		if strings.HasSuffix(path, ".map") {
			tab, _ = jitmap.ParsePerfMap(data) // a damaged tail: keep what came before
		} else {
			tab, _ = jitmap.ParseJitdump(data)
		}
		st.files[path] = &jitFile{size: fi.Size(), mtime: fi.ModTime(), tab: tab}
	}
}
