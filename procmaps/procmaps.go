// Package procmaps is the one reader of Linux memory maps (/proc/PID/maps)
// and the one computation of a mapped ELF file's load bias. The live
// backend (target/ptrace), the load-module finder (modules), the snapshot
// unwinder and the profiler (unwind/snapshot, profiling) all use it, so a
// fix to either lands everywhere.
package procmaps

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/PID/maps: the run-time range [Start, End)
// maps the file Name from file offset Offset.
type Mapping struct {
	Start, End uint64
	Read       bool
	Write      bool
	Exec       bool
	Shared     bool // 's': a shared mapping ('p': private)
	Offset     uint64
	DevMajor   uint32
	DevMinor   uint32
	Inode      uint64
	// Name is the rest of the line: a path (spaces kept, " (deleted)" when
	// the file is gone), a bracketed name ("[vdso]", "[stack]"), or "" for
	// anonymous memory.
	Name string
}

// Path returns the mapped file's path without the kernel's " (deleted)"
// mark and whether that mark was there; "" for mappings that are not of a
// file (anonymous memory, "[vdso]").
func (m *Mapping) Path() (path string, deleted bool) {
	if !strings.HasPrefix(m.Name, "/") {
		return "", false
	}
	path, deleted = strings.CutSuffix(m.Name, " (deleted)")
	return path, deleted
}

// LineError says which line of a maps text could not be parsed, and why.
type LineError struct {
	Line int
	Text string
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("maps line %d %q: %v", e.Line, e.Text, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// maxLine bounds one line of maps text (a path is at most PATH_MAX).
const maxLine = 8192

// ReadPID reads and parses /proc/PID/maps.
func ReadPID(pid int) ([]Mapping, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse parses the text of /proc/PID/maps. At a line it cannot parse it
// stops with a *LineError, returning the mappings before it.
func Parse(data []byte) ([]Mapping, error) {
	out := make([]Mapping, 0, bytes.Count(data, []byte{'\n'})+1)
	for n := 1; len(data) > 0; n++ {
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		m, err := ParseLine(string(l))
		if err != nil {
			return out, &LineError{Line: n, Text: string(l), Err: err}
		}
		out = append(out, m)
	}
	return out, nil
}

// Read is Parse over a reader, a line at a time (lines over 8 KiB are an
// error).
func Read(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLine)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		m, err := ParseLine(text)
		if err != nil {
			return out, &LineError{Line: n, Text: text, Err: err}
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("procmaps: reading maps: %w", err)
	}
	return out, nil
}

// ParseLine parses one line: "start-end perms offset major:minor inode [name]".
func ParseLine(l string) (Mapping, error) {
	var m Mapping
	f := strings.Fields(l)
	if len(f) < 5 {
		return m, fmt.Errorf("%d fields, want at least 5 (range, permissions, offset, device, inode)", len(f))
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return m, fmt.Errorf("address range %q has no '-'", f[0])
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return m, fmt.Errorf("bad address range %q", f[0])
	}
	if err := m.setPerms(f[1]); err != nil {
		return m, err
	}
	off, err := strconv.ParseUint(f[2], 16, 64)
	if err != nil {
		return m, fmt.Errorf("bad offset %q", f[2])
	}
	maj, min, ok := strings.Cut(f[3], ":")
	dmaj, err1 := strconv.ParseUint(maj, 16, 32)
	dmin, err2 := strconv.ParseUint(min, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return m, fmt.Errorf("bad device %q", f[3])
	}
	ino, err := strconv.ParseUint(f[4], 10, 64)
	if err != nil {
		return m, fmt.Errorf("bad inode %q", f[4])
	}
	m.Start, m.End, m.Offset = start, end, off
	m.DevMajor, m.DevMinor, m.Inode = uint32(dmaj), uint32(dmin), ino
	if len(f) > 5 {
		// The name is everything after the inode; it may contain spaces.
		m.Name = strings.TrimLeft(afterFields(l, 5), " \t")
	}
	return m, nil
}

func (m *Mapping) setPerms(p string) error {
	if len(p) != 4 {
		return fmt.Errorf("bad permissions %q", p)
	}
	for i, c := range p {
		switch {
		case i == 0 && c == 'r':
			m.Read = true
		case i == 1 && c == 'w':
			m.Write = true
		case i == 2 && c == 'x':
			m.Exec = true
		case i == 3 && c == 's':
			m.Shared = true
		case c == '-' || (i == 3 && c == 'p'):
		default:
			return fmt.Errorf("bad permissions %q", p)
		}
	}
	return nil
}

// afterFields returns what follows the first n space-separated fields of s.
func afterFields(s string, n int) string {
	i := 0
	for ; n > 0; n-- {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		for i < len(s) && s[i] != ' ' && s[i] != '\t' {
			i++
		}
	}
	return s[i:]
}

// pageSize is the granularity of mappings: a PT_LOAD segment is mapped from
// its file offset rounded down to a page.
const pageSize = 4096

// LoadBias returns the load bias (run-time minus link-time address) of an
// ELF file mapped at run-time address addr from file offset offset, from
// the PT_LOAD segment of progs covering that offset; false when none does
// (the mapping is no part of a loaded segment).
//
// lld packs segments without page padding in the file (rustc's default
// linker since 1.90): one page holds the end of a segment and the start of
// the next, so a mapping's page-rounded offset can lie in two segments
// whose vaddr-offset deltas differ. The loader maps each segment from its
// own rounded offset, so the segment starting where the mapping starts is
// the mapping's; one covering the offset is the fallback (a mapping split
// by mprotect starts inside its segment).
func LoadBias(progs []elf.ProgHeader, addr, offset uint64) (uint64, bool) {
	best := -1
	for i, ph := range progs {
		if ph.Type != elf.PT_LOAD {
			continue
		}
		if offset < ph.Off&^(pageSize-1) || offset >= ph.Off+max(ph.Filesz, 1) {
			continue
		}
		if best < 0 || ph.Off&^(pageSize-1) == offset {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	// Run-time address of file offset `offset` is addr.
	ph := progs[best]
	return addr - (ph.Vaddr - ph.Off + offset), true
}

// Progs returns the program headers of f (for LoadBias).
func Progs(f *elf.File) []elf.ProgHeader {
	out := make([]elf.ProgHeader, len(f.Progs))
	for i, p := range f.Progs {
		out[i] = p.ProgHeader
	}
	return out
}
