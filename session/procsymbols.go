package session

import (
	"debug/elf"
	"fmt"
	"os"
	"sort"

	"github.com/sondedbg/sonde/procmaps"
	"github.com/sondedbg/sonde/symbols"
)

// ProcessSymbols symbolizes run-time addresses of a live process from its
// memory map alone (/proc/PID/maps: no ptrace, the process runs on, as
// `sonde symbolize --pid` wants): each address is attributed to the mapped
// file (or the vDSO) that holds it and translated to the file's link-time
// address through its load bias. The map is read once, when it is made.
type ProcessSymbols struct {
	pid    int
	opts   *symbols.Options
	maps   []procmaps.Mapping // of files and the vDSO, by address
	files  map[string]*procFile
	hinted map[string]bool
}

// procFile is one mapped file's symbols.
type procFile struct {
	bin   *symbols.Binary
	err   error
	progs []elf.ProgHeader
}

// Location says where an address of a process is: the module's name as
// the process maps it (a path, " (deleted)" included; "[vdso]"), its symbol
// file, and the address in that file.
type Location struct {
	Module string
	Binary *symbols.Binary // nil when the file could not be read
	Link   uint64          // link-time address (valid when Binary is not nil)
}

// OpenProcessSymbols reads the memory map of process pid; opts say how
// symbol files are opened and their debug files found.
func OpenProcessSymbols(pid int, opts *symbols.Options) (*ProcessSymbols, error) {
	maps, err := procmaps.ReadPID(pid)
	if err != nil {
		return nil, fmt.Errorf("session: /proc/%d/maps: %w", pid, err)
	}
	p := &ProcessSymbols{pid: pid, opts: opts, files: map[string]*procFile{}, hinted: map[string]bool{}}
	for _, m := range maps {
		if path, _ := m.Path(); path != "" || m.Name == "[vdso]" {
			p.maps = append(p.maps, m)
		}
	}
	sort.Slice(p.maps, func(i, j int) bool { return p.maps[i].Start < p.maps[j].Start })
	return p, nil
}

func (p *ProcessSymbols) mappingAt(addr uint64) *procmaps.Mapping {
	i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].End > addr })
	if i < len(p.maps) && p.maps[i].Start <= addr {
		return &p.maps[i]
	}
	return nil
}

// file opens the symbols of a mapping's file, once per name.
func (p *ProcessSymbols) file(m *procmaps.Mapping) *procFile {
	if f, ok := p.files[m.Name]; ok {
		return f
	}
	f := &procFile{}
	if m.Name == "[vdso]" {
		// The vDSO exists only in the process's memory.
		image, err := p.readMemory(m.Start, m.End-m.Start)
		if err == nil {
			f.bin, err = symbols.OpenBytes(fmt.Sprintf("[vdso] of %d", p.pid), image, &symbols.Options{NoSearch: true})
		}
		f.err = err
	} else {
		// Through /proc/PID/root, so files of another mount namespace are found.
		file, _ := m.Path()
		path := fmt.Sprintf("/proc/%d/root%s", p.pid, file)
		if _, err := os.Stat(path); err != nil {
			path = file
		}
		f.bin, f.err = symbols.Open(path, p.opts)
	}
	if f.bin != nil {
		f.progs = procmaps.Progs(f.bin.ELF())
	}
	p.files[m.Name] = f
	return f
}

func (p *ProcessSymbols) readMemory(addr, size uint64) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", p.pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, int64(addr)); err != nil {
		return nil, err
	}
	return buf, nil
}

// AppendFrames appends the frames at a run-time address (innermost inlined
// call first; Start made run-time) to dst, and says where the address is.
// An address in no mapped file gets no frames and an empty Location.
func (p *ProcessSymbols) AppendFrames(dst []symbols.Frame, addr uint64) ([]symbols.Frame, Location, error) {
	m := p.mappingAt(addr)
	if m == nil {
		return dst, Location{}, nil
	}
	loc := Location{Module: m.Name}
	f := p.file(m)
	if f.bin == nil {
		return dst, loc, f.err
	}
	bias, ok := procmaps.LoadBias(f.progs, m.Start, m.Offset)
	if !ok {
		return dst, loc, nil
	}
	loc.Binary, loc.Link = f.bin, addr-bias
	frames, err := f.bin.AppendFrames(dst, loc.Link)
	for i := len(dst); i < len(frames); i++ {
		if frames[i].Start != 0 {
			frames[i].Start += bias
		}
	}
	return frames, loc, err
}

// Hint reports, once per module, how to get debug information it lacks.
func (p *ProcessSymbols) Hint() string {
	for name, f := range p.files {
		if f.bin != nil && !p.hinted[name] {
			p.hinted[name] = true
			if h := f.bin.Hint(); h != "" {
				return h
			}
		}
	}
	return ""
}

// Close closes the symbol files.
func (p *ProcessSymbols) Close() {
	for _, f := range p.files {
		if f.bin != nil {
			f.bin.Close()
		}
	}
}
