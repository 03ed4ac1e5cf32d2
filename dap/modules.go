package dap

import (
	"path/filepath"
	"sort"
	"sync"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/session"
)

// Modules are the process's load modules (executable, libraries, the
// vDSO); a module event tells the client of each one that appears or goes.

type moduleState struct {
	mu    sync.Mutex
	known map[string]bool // by name, those the client was told of
}

var modStates sync.Map // *debuggee → *moduleState

func (d *debuggee) moduleState() *moduleState {
	v, _ := modStates.LoadOrStore(d, &moduleState{known: map[string]bool{}})
	return v.(*moduleState)
}

func dapModule(m *session.Module) godap.Module {
	name := filepath.Base(m.Name)
	dm := godap.Module{Id: m.Name, Name: name, AddressRange: hexAddr(m.Start) + "-" + hexAddr(m.End)}
	if m.Path != "" {
		dm.Path = m.Path
	}
	return dm
}

func (s *Server) modules(r *request) (any, error) {
	var a godap.ModulesArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	mods, err := d.sess.Modules(d.proc)
	if err != nil {
		return nil, err
	}
	out := make([]godap.Module, 0, len(mods))
	for _, m := range mods {
		out = append(out, dapModule(m))
	}
	total := len(out)
	if a.StartModule > 0 || a.ModuleCount > 0 {
		out = page(out, a.StartModule, a.ModuleCount)
	}
	return godap.ModulesResponseBody{Modules: out, TotalModules: total}, nil
}

// moduleEvents tells the client which modules appeared or went since it
// was last told.
func (d *debuggee) moduleEvents() {
	mods, err := d.sess.Modules(d.proc)
	if err != nil {
		return
	}
	ms := d.moduleState()
	ms.mu.Lock()
	now := map[string]*session.Module{}
	for _, m := range mods {
		now[m.Name] = m
	}
	var added, removed []godap.Module
	for name, m := range now {
		if !ms.known[name] {
			ms.known[name] = true
			added = append(added, dapModule(m))
		}
	}
	for name := range ms.known {
		if now[name] == nil {
			delete(ms.known, name)
			removed = append(removed, godap.Module{Id: name, Name: filepath.Base(name)})
		}
	}
	ms.mu.Unlock()
	sort.Slice(added, func(i, j int) bool { return added[i].Name < added[j].Name })
	for _, m := range added {
		d.s.sendEvent("module", godap.ModuleEventBody{Reason: "new", Module: m})
	}
	for _, m := range removed {
		d.s.sendEvent("module", godap.ModuleEventBody{Reason: "removed", Module: m})
	}
}

// loadedSources lists the source files of every loaded module's
// compilation units, headers with code included (from the line tables the
// session reads), for the client's "loaded sources" view.
func (s *Server) loadedSources(r *request) (any, error) {
	var a godap.LoadedSourcesArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	srcs, err := d.sess.Sources(d.proc)
	if err != nil {
		return nil, err
	}
	out := make([]godap.Source, 0, len(srcs))
	for _, src := range srcs {
		if !filepath.IsAbs(src.Path) {
			continue // a build directory not recorded (Debian's libc: "./elf"): nothing a client can open
		}
		out = append(out, godap.Source{Name: filepath.Base(src.Path), Path: src.Path})
	}
	return godap.LoadedSourcesResponseBody{Sources: out}, nil
}
