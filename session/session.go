// Package session joins a debug target to what sonde knows about its code: for
// each process, its load modules (kept current across dlopen and exec), their
// symbol files (opened lazily and shared between processes), and an unwinder
// whose callbacks read through the target. One walk of a stopped thread's
// stack gives its backtrace and its frames with every recovered register, as
// variables.Frame values (frames.go), from which values are read (values.go,
// tls.go). Front ends — the CLI, the TCF agent, the DAP server — use a Session
// so they never glue the layers together themselves: it also answers where a
// program starts, the CFI rule at an address, link-map names and symbol names
// (program.go, framerule.go). It is the target's StepAdvisor for line
// stepping and step-out.
//
// It works the same for every backend: live processes and core files are both
// target contexts.
package session

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/symbols/debugfile"
	"github.com/sondedbg/sonde/symbols/debuginfod"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

// Options configure where debug information is looked for.
type Options struct {
	// DebugDirs are searched for separate debug files (default /usr/lib/debug).
	DebugDirs []string
	// Debuginfod, when set, is asked for debug files found nowhere else.
	Debuginfod *debuginfod.Client
	// Warn, when set, receives one message per module whose debug information
	// is missing or damaged (so a CLI can say once how to get it).
	Warn func(msg string)
}

// Session is the shared knowledge about one target's code.
type Session struct {
	target *target.Target
	opts   Options

	mu     sync.Mutex
	files  map[fileKey]*file // symbol files by identity, shared by processes
	warned map[string]bool
	// modulesChanged is called when a tracked process loads or unloads a
	// library, while the thread that did it is still stopped.
	modulesChanged func(proc *target.Context)
	// stats remembers each path's identity for statReuse, so that the
	// symbol lookups of one client request (a stack of 57 frames makes over
	// a hundred) do not stat the file every time.
	stats map[string]statEntry
}

// statReuse is how long a file's identity is trusted before it is checked
// again (a file rebuilt in place is noticed after at most this long).
const statReuse = time.Second

type statEntry struct {
	key fileKey
	at  time.Time
}

// OnModulesChanged installs f to be called when a process followed with
// TrackModules loads or unloads a library. f runs while the thread that
// changed the list is stopped at the dynamic linker's hook, so whatever f plants
// (breakpoints in the new library) is in place before the library's code runs.
func (s *Session) OnModulesChanged(f func(proc *target.Context)) {
	s.mu.Lock()
	s.modulesChanged = f
	s.mu.Unlock()
}

// fileKey identifies a file on disk: the same path replaced by a rebuild is a
// different file.
type fileKey struct {
	path  string
	size  int64
	mtime int64
}

// file is one opened symbol file.
type file struct {
	once    sync.Once
	binary  *symbols.Binary
	sources unwind.Sources
	// tables are the unwind engine's CFI tables and row cache of the
	// file, shared by every module that maps it (LookupModule) and built
	// ahead by PrepareSymbols.
	tables *unwind.Tables
	err    error
	cfi    cfiTables // for FrameRule
}

// procState is a Session's knowledge of one process.
type procState struct {
	mu   sync.Mutex
	mods modules.List
	// gen is the process's MapGeneration when mods was read: mods is
	// current while the process reports no other change.
	gen     uint64
	engine  map[*modules.Module]*unwind.Module
	tracker *modules.Tracker
}

var procExt = target.NewExtension[procState]()

// New makes a Session for t and installs it as t's step advisor.
func New(t *target.Target, opts Options) *Session {
	s := &Session{target: t, opts: opts, files: map[fileKey]*file{}, warned: map[string]bool{}}
	t.SetStepAdvisor(s)
	return s
}

// Target returns the session's target.
func (s *Session) Target() *target.Target { return s.target }

// Modules returns the modules of c's process, rescanning after the process
// reported that its mappings changed (target.Context.MapGeneration: an
// exec, a library loaded or unloaded). The generation is read before the
// scan, so a change reported during it makes the next call scan again;
// counted when reported rather than marked by a listener, a change reported
// before a scan, whose event listeners hear only later, does not throw away
// the scan that saw it (the dynamic linker's hook reported every library
// of a program's start, the front end read the list for its module events,
// and the listener then made the first stop read it a third time).
func (s *Session) Modules(c *target.Context) (modules.List, error) {
	proc := c.Process()
	st := procExt.Get(proc)
	st.mu.Lock()
	defer st.mu.Unlock()
	gen := proc.MapGeneration()
	if st.mods != nil && st.gen == gen {
		return st.mods, nil
	}
	mods, err := modules.Find(proc)
	if err != nil {
		return nil, err
	}
	st.mods, st.gen = mods, gen
	st.engine = map[*modules.Module]*unwind.Module{}
	return mods, nil
}

// TrackModules follows proc's shared-library loads and unloads with an
// eventpoint on the dynamic linker's hook (live processes only). stop makes
// each change stop the process with a "Shared Library" reason.
func (s *Session) TrackModules(proc *target.Context, stop bool) error {
	st := procExt.Get(proc.Process())
	st.mu.Lock()
	tr := st.tracker
	st.mu.Unlock()
	if tr == nil {
		var err error
		// The tracker reports each change (MemoryMapChanged) before it
		// calls this: Modules reads the list again.
		tr, err = modules.Track(proc.Process(), func(ch modules.Change) {
			s.mu.Lock()
			f := s.modulesChanged
			s.mu.Unlock()
			if f != nil {
				f(ch.Process)
			}
		})
		if err != nil {
			return err
		}
		st.mu.Lock()
		st.tracker = tr
		st.mu.Unlock()
	}
	tr.StopOnChange.Store(stop)
	return nil
}

// UntrackModules stops following proc's library loads and removes the
// eventpoint TrackModules planted (the module list is read again from the
// process's mappings when asked). A tool that needed the list only to
// resolve its locations (sonde trace) leaves no int3 in the dynamic linker
// behind it should it be killed with SIGKILL.
func (s *Session) UntrackModules(proc *target.Context) error {
	st := procExt.Get(proc.Process())
	st.mu.Lock()
	tr := st.tracker
	st.tracker = nil
	st.mods = nil // read again from the mappings
	st.mu.Unlock()
	if tr == nil {
		return nil
	}
	return tr.Close()
}

// Binary returns the symbol file of a module (nil for a module whose file
// cannot be read; the error says why).
func (s *Session) Binary(m *modules.Module) (*symbols.Binary, error) {
	f, err := s.file(m)
	if err != nil {
		return nil, err
	}
	return f.binary, f.err
}

func (s *Session) file(m *modules.Module) (*file, error) {
	var key fileKey
	if m.VDSO {
		// The vDSO is the same image in every process of this kernel.
		key = fileKey{path: "[vdso]", size: int64(len(m.Image))}
	} else if m.Path == "" {
		return nil, fmt.Errorf("session: %s: no file to read symbols from: %w", m.Name, m.PathErr)
	} else {
		now := time.Now()
		s.mu.Lock()
		e, ok := s.stats[m.Path]
		s.mu.Unlock()
		if ok && now.Sub(e.at) < statReuse {
			key = e.key
		} else {
			fi, err := os.Stat(m.Path)
			if err != nil {
				return nil, fmt.Errorf("session: %s: %w", m.Path, err)
			}
			key = fileKey{path: m.Path, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
			s.mu.Lock()
			if s.stats == nil {
				s.stats = map[string]statEntry{}
			}
			s.stats[m.Path] = statEntry{key, now}
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	f := s.files[key]
	if f == nil {
		f = &file{}
		s.files[key] = f
	}
	s.mu.Unlock()
	f.once.Do(func() { s.open(f, m) })
	return f, nil
}

func (s *Session) open(f *file, m *modules.Module) {
	opts := &symbols.Options{Search: debugfile.Options{DebugDirs: s.opts.DebugDirs, Debuginfod: s.opts.Debuginfod}}
	if m.VDSO {
		f.binary, f.err = symbols.OpenBytes("[vdso]", m.Image, opts)
	} else {
		f.binary, f.err = symbols.Open(m.Path, opts)
	}
	if f.binary == nil {
		s.warn(m.Name, fmt.Sprintf("sonde: cannot read symbols of %s: %v", m.Name, f.err))
		return
	}
	// No hint for the vDSO: no package installs its debug file, and a
	// lookup by name opens it in every process (found in dap's console).
	if h := f.binary.Hint(); h != "" && !m.VDSO {
		s.warn(m.Name, h)
	}
	u, _ := f.binary.UnwindSections()
	f.sources = unwind.Sources{
		EHFrameHdr: unwind.Section{Data: u.EhFrameHdr.Data, Addr: u.EhFrameHdr.Addr},
		EHFrame:    unwind.Section{Data: u.EhFrame.Data, Addr: u.EhFrame.Addr},
		DebugFrame: unwind.Section{Data: u.DebugFrame.Data, Addr: u.DebugFrame.Addr},
	}
	f.tables = unwind.NewTables(f.sources)
}

func (s *Session) warn(key, msg string) {
	if s.opts.Warn == nil {
		return
	}
	s.mu.Lock()
	seen := s.warned[key]
	s.warned[key] = true
	s.mu.Unlock()
	if !seen {
		s.opts.Warn(msg)
	}
}
