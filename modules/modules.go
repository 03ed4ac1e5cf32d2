// Package modules finds the load modules of a process — its executable, the
// dynamic linker, shared libraries (dlopen'ed ones too) and the vDSO — with the
// load bias of each, from the process's memory map, its ELF auxiliary vector and
// the dynamic linker's r_debug / link_map list; and it follows loads and unloads
// through the dynamic linker's debug hook (an eventpoint on _dl_debug_state).
//
// It reads everything through the target model, so live processes and core files
// are served alike; ELF headers are read from target memory first (they are what
// was loaded) and from the file on disk only when memory lacks them.
package modules

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sondedbg/sonde/procmaps"
	"github.com/sondedbg/sonde/target"
)

// Process is what this package needs of a target process; *target.Context
// satisfies it.
type Process interface {
	MemoryMap() ([]target.MemoryRegion, error)
	ReadMemory(addr uint64, p []byte) (int, error)
}

// auxvSource is the optional part of Process that yields the auxiliary vector.
type auxvSource interface {
	Auxv() ([]byte, error)
}

// Module is one loaded ELF object.
type Module struct {
	// Name is how the process maps it: a path, or "[vdso]".
	Name string
	// Path is the file to read it from; "" when it exists only in memory,
	// or when no file can stand in for it (PathErr says why).
	Path    string
	PathErr error
	// Bias is added to link-time addresses to get run-time ones.
	Bias uint64
	// Start and End bound its mappings.
	Start, End uint64
	Regions    []target.MemoryRegion
	// Main marks the executable, Interpreter the dynamic linker, VDSO the vDSO.
	Main, Interpreter, VDSO bool
	// Image is the module's ELF image read from memory (the vDSO only).
	Image []byte
	// Deleted is set when the mapped file was deleted or replaced on disk.
	Deleted bool
	// Dynamic is the run-time address of its dynamic section (0 if none).
	Dynamic uint64
}

// Contains reports whether addr lies in one of the module's mappings.
func (m *Module) Contains(addr uint64) bool {
	for _, r := range m.Regions {
		if r.Contains(addr) {
			return true
		}
	}
	return false
}

func (m *Module) String() string {
	return fmt.Sprintf("%s [0x%x-0x%x) bias 0x%x", m.Name, m.Start, m.End, m.Bias)
}

// List is a process's modules, sorted by address.
type List []*Module

// ForAddress returns the module whose mappings hold addr, or nil.
func (l List) ForAddress(addr uint64) *Module {
	i := sort.Search(len(l), func(i int) bool { return l[i].End > addr })
	for ; i < len(l) && l[i].Start <= addr; i++ {
		if l[i].Contains(addr) {
			return l[i]
		}
	}
	return nil
}

// Main returns the executable's module, or nil.
func (l List) Main() *Module {
	for _, m := range l {
		if m.Main {
			return m
		}
	}
	return nil
}

// Interpreter returns the dynamic linker's module, or nil.
func (l List) Interpreter() *Module {
	for _, m := range l {
		if m.Interpreter {
			return m
		}
	}
	return nil
}

// Auxiliary-vector keys used here.
const (
	atPHDR         = 3
	atEntry        = 9
	atSysinfoEHDR  = 33
	maxAuxvEntries = 512
	// maxVDSOImage bounds the vDSO image read from memory (Linux's is two
	// to four pages).
	maxVDSOImage = 1 << 20
)

// parseAuxv decodes a 64-bit auxiliary vector into key → value.
func parseAuxv(b []byte) map[uint64]uint64 {
	out := map[uint64]uint64{}
	for i := 0; i+16 <= len(b) && i/16 < maxAuxvEntries; i += 16 {
		k := binary.LittleEndian.Uint64(b[i:])
		if k == 0 {
			break
		}
		out[k] = binary.LittleEndian.Uint64(b[i+8:])
	}
	return out
}

// Find lists the modules of p.
func Find(p Process) (List, error) {
	regions, err := p.MemoryMap()
	if err != nil {
		return nil, err
	}
	var auxv map[uint64]uint64
	if a, ok := p.(auxvSource); ok {
		if b, err := a.Auxv(); err == nil {
			auxv = parseAuxv(b)
		}
	}
	var mods List
	var problems []error
	for _, g := range groupRegions(regions) {
		m, err := describe(p, g)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Start < mods[j].Start })
	markMain(mods, auxv)
	if err := applyLinkMap(p, mods); err != nil {
		problems = append(problems, err)
	}
	if len(mods) == 0 && len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return mods, nil
}

// groupRegions cuts the memory map into one run of regions per mapped object:
// consecutive mappings of the same file, a new run starting where the file is
// mapped again from offset 0. The vDSO is its own run.
func groupRegions(regions []target.MemoryRegion) [][]target.MemoryRegion {
	var groups [][]target.MemoryRegion
	var cur []target.MemoryRegion
	flush := func() {
		if len(cur) > 0 {
			groups = append(groups, cur)
			cur = nil
		}
	}
	for _, r := range regions {
		name := r.FileName
		isFile := strings.HasPrefix(name, "/")
		if !isFile && name != "[vdso]" {
			continue // heap, stack, anonymous memory
		}
		if len(cur) > 0 {
			last := cur[len(cur)-1]
			same := last.FileName == name && last.Inode == r.Inode
			if !same || r.Offset == 0 || name == "[vdso]" {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return groups
}

const deletedSuffix = " (deleted)"

// describe reads one mapped object's ELF headers and computes its load bias.
func describe(p Process, g []target.MemoryRegion) (*Module, error) {
	first := g[0]
	m := &Module{Name: first.FileName, Regions: g, Start: first.Addr, End: g[len(g)-1].End()}
	if strings.HasSuffix(m.Name, deletedSuffix) {
		m.Deleted = true
		m.Name = strings.TrimSuffix(m.Name, deletedSuffix)
	}
	var f *elf.File
	var err error
	if m.Name == "[vdso]" {
		m.VDSO = true
		// The mapping's size comes from the memory map (a core file's
		// notes, for one): read at most what a vDSO can be.
		m.Image = make([]byte, min(first.Size, maxVDSOImage))
		n, rerr := p.ReadMemory(first.Addr, m.Image)
		m.Image = m.Image[:n]
		if rerr != nil && n == 0 {
			return nil, fmt.Errorf("modules: reading the vDSO at 0x%x: %w", first.Addr, rerr)
		}
		f, err = elf.NewFile(bytes.NewReader(m.Image))
	} else {
		m.Path = m.Name
		f, err = headersFromMemory(p, first)
		if err == nil {
			// An ELF object: its symbols and unwind tables come from the
			// file the target says stands in for it (a core's moved or
			// sysroot copy), never from a different file at its path.
			m.Path, m.PathErr = locate(p, m.Name)
		} else if path, lerr := locate(p, m.Name); lerr != nil {
			err = fmt.Errorf("%w (and no file: %w)", err, lerr)
		} else if path != m.Name || !m.Deleted {
			m.Path = path
			f, err = elf.Open(m.Path)
			if f != nil {
				defer f.Close()
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("modules: %s at 0x%x: %w", m.Name, first.Addr, err)
	}
	bias, ok := loadBias(f, g)
	if !ok {
		return nil, fmt.Errorf("modules: %s at 0x%x: no PT_LOAD segment matches its mappings", m.Name, first.Addr)
	}
	m.Bias = bias
	for _, ph := range f.Progs {
		if ph.Type == elf.PT_DYNAMIC {
			m.Dynamic = ph.Vaddr + bias
		}
	}
	return m, nil
}

// fileLocator is the optional part of Process that says which file stands
// in for a mapped one (target.Context: a core's verified copy).
type fileLocator interface {
	LocateFile(mapped string) (string, error)
}

// locate returns the file to read the module mapped from name: what p says
// stands in for it, or name itself.
func locate(p Process, name string) (string, error) {
	if l, ok := p.(fileLocator); ok {
		return l.LocateFile(name)
	}
	return name, nil
}

// headersFromMemory parses the ELF header and program headers from the first
// page of a mapping that starts at file offset 0. Sections are not available
// this way, which is fine: only segments are needed here.
func headersFromMemory(p Process, r target.MemoryRegion) (*elf.File, error) {
	if r.Offset != 0 {
		return nil, errors.New("first mapping does not start at file offset 0")
	}
	size := r.Size
	if size > 16384 {
		size = 16384
	}
	buf := make([]byte, size)
	n, err := p.ReadMemory(r.Addr, buf)
	if n < 64 {
		if err == nil {
			err = errors.New("short read")
		}
		return nil, err
	}
	buf = buf[:n]
	if !bytes.HasPrefix(buf, []byte(elf.ELFMAG)) {
		return nil, errors.New("no ELF header in memory")
	}
	// Make elf.NewFile ignore section headers, which lie beyond what was read.
	hdr := append([]byte(nil), buf...)
	if len(hdr) >= 64 {
		binary.LittleEndian.PutUint64(hdr[0x28:], 0) // e_shoff
		binary.LittleEndian.PutUint16(hdr[0x3c:], 0) // e_shnum
		binary.LittleEndian.PutUint16(hdr[0x3e:], 0) // e_shstrndx
	}
	return elf.NewFile(bytes.NewReader(hdr))
}

// loadBias finds the bias from a mapping whose file offset a PT_LOAD covers.
func loadBias(f *elf.File, g []target.MemoryRegion) (uint64, bool) {
	progs := procmaps.Progs(f)
	for _, r := range g {
		if bias, ok := procmaps.LoadBias(progs, r.Addr, r.Offset); ok {
			return bias, true
		}
	}
	return 0, false
}

// markMain marks the executable (the module holding AT_ENTRY or AT_PHDR, else the
// lowest file-backed module) and the interpreter (a module named ld-linux*).
func markMain(mods List, auxv map[uint64]uint64) {
	var main *Module
	for _, key := range []uint64{atEntry, atPHDR} {
		if addr, ok := auxv[key]; ok && main == nil {
			main = mods.ForAddress(addr)
		}
	}
	if main == nil {
		for _, m := range mods {
			if !m.VDSO {
				main = m
				break
			}
		}
	}
	if main != nil {
		main.Main = true
	}
	for _, m := range mods {
		base := m.Name[strings.LastIndexByte(m.Name, '/')+1:]
		if !m.Main && (strings.HasPrefix(base, "ld-linux") || strings.HasPrefix(base, "ld64.so")) {
			m.Interpreter = true
		}
	}
}
