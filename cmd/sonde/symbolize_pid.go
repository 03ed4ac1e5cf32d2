package main

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/symbols"
)

// processResolver symbolizes run-time addresses of a live process from its
// memory map (/proc/PID/maps, no ptrace needed): each address is attributed
// to the mapped file (or the vDSO) that contains it and translated to the
// file's link-time address through the load bias of its PT_LOAD segment.
// The map is read once, when the resolver is made.
type processResolver struct {
	pid     int
	opts    *symbols.Options
	maps    []mapping
	modules map[string]*module
	hinted  map[string]bool
}

type mapping struct {
	start, end, offset uint64
	path               string // file path, or "[vdso]"
}

type module struct {
	bin *symbols.Binary
	err error
	// segs are the PT_LOAD segments: file offset -> link address.
	segs []elf.ProgHeader
}

func newProcessResolver(pid int, opts *symbols.Options) (*processResolver, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &processResolver{pid: pid, opts: opts, modules: map[string]*module{}, hinted: map[string]bool{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode [path]
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		var m mapping
		m.start, _ = strconv.ParseUint(lo, 16, 64)
		m.end, _ = strconv.ParseUint(hi, 16, 64)
		m.offset, _ = strconv.ParseUint(fields[2], 16, 64)
		m.path = strings.Join(fields[5:], " ")
		if m.path == "[vdso]" || strings.HasPrefix(m.path, "/") {
			r.maps = append(r.maps, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/proc/%d/maps: %w", pid, err)
	}
	sort.Slice(r.maps, func(i, j int) bool { return r.maps[i].start < r.maps[j].start })
	return r, nil
}

func (r *processResolver) mappingAt(addr uint64) *mapping {
	i := sort.Search(len(r.maps), func(i int) bool { return r.maps[i].end > addr })
	if i < len(r.maps) && r.maps[i].start <= addr {
		return &r.maps[i]
	}
	return nil
}

func (r *processResolver) module(m *mapping) *module {
	if mod, ok := r.modules[m.path]; ok {
		return mod
	}
	mod := &module{}
	if m.path == "[vdso]" {
		// The vDSO exists only in the process's memory.
		image, err := r.readMemory(m.start, m.end-m.start)
		if err == nil {
			mod.bin, err = symbols.OpenBytes(fmt.Sprintf("[vdso] of %d", r.pid), image, &symbols.Options{NoSearch: true})
		}
		mod.err = err
	} else {
		// Through /proc/PID/root, so files of another mount namespace are found.
		path := fmt.Sprintf("/proc/%d/root%s", r.pid, strings.TrimSuffix(m.path, " (deleted)"))
		if _, err := os.Stat(path); err != nil {
			path = m.path
		}
		mod.bin, mod.err = symbols.Open(path, r.opts)
	}
	if mod.bin != nil {
		for _, p := range mod.bin.ELF().Progs {
			if p.Type == elf.PT_LOAD {
				mod.segs = append(mod.segs, p.ProgHeader)
			}
		}
	}
	r.modules[m.path] = mod
	return mod
}

func (r *processResolver) readMemory(addr, size uint64) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", r.pid))
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

// linkAddress translates a run-time address in mapping m to the module's
// link-time address: the PT_LOAD segment holding the mapped file offset
// gives the bias.
func (mod *module) linkAddress(m *mapping, addr uint64) (uint64, bool) {
	fileOff := addr - m.start + m.offset
	for _, s := range mod.segs {
		if fileOff >= s.Off && fileOff < s.Off+s.Filesz {
			return fileOff - s.Off + s.Vaddr, true
		}
	}
	return 0, false
}

func (r *processResolver) frames(dst []symbols.Frame, addr uint64) ([]symbols.Frame, string, error) {
	m := r.mappingAt(addr)
	if m == nil {
		return dst, "", nil
	}
	mod := r.module(m)
	if mod.bin == nil {
		return dst, m.path, mod.err
	}
	link, ok := mod.linkAddress(m, addr)
	if !ok {
		return dst, m.path, nil
	}
	frames, err := mod.bin.AppendFrames(dst, link)
	// Frame.Start is a link-time address: report it at run time. Files are
	// spelled as `sonde stack` (and gdb) spell them.
	bias := addr - link
	for i := len(dst); i < len(frames); i++ {
		if frames[i].Start != 0 {
			frames[i].Start += bias
		}
		if frames[i].File != "" {
			frames[i].File = gdbFileAt(mod.bin, link, frames[i].File)
		}
	}
	return frames, m.path, err
}

func (r *processResolver) addrWidth() int { return 16 }

// hint reports, once per module, how to get debug info it lacks.
func (r *processResolver) hint() string {
	for path, mod := range r.modules {
		if mod.bin != nil && !r.hinted[path] {
			r.hinted[path] = true
			if h := mod.bin.Hint(); h != "" {
				return h
			}
		}
	}
	return ""
}

func (r *processResolver) close() {
	for _, mod := range r.modules {
		if mod.bin != nil {
			mod.bin.Close()
		}
	}
}
