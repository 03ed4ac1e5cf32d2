package debugfile

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sondedbg/sonde/symbols/debuginfod"
)

// DefaultDebugDir is where distributions install separate debug files.
const DefaultDebugDir = "/usr/lib/debug"

// Options configure Find.
type Options struct {
	// DebugDirs are the global debug directories, searched in order; nil
	// means []string{DefaultDebugDir}. (An empty non-nil slice searches none.)
	DebugDirs []string
	// Debuginfod, when non-nil, is asked last (the network is slowest).
	Debuginfod *debuginfod.Client
	// MaxMiniDebugInfo bounds the decompressed .gnu_debugdata size;
	// <= 0 means DefaultMiniDebugInfoLimit.
	MaxMiniDebugInfo int64
}

// Method says where debug information came from.
type Method int

const (
	MethodNone          Method = iota // nothing found
	MethodBinary                      // the binary has .debug_info itself
	MethodBuildID                     // <debugdir>/.build-id/xx/yyyy.debug
	MethodDebugLink                   // .gnu_debuglink, CRC checked
	MethodDebuginfod                  // downloaded by debuginfod
	MethodMiniDebugInfo               // .gnu_debugdata (symbols only)
)

func (m Method) String() string {
	switch m {
	case MethodBinary:
		return "binary"
	case MethodBuildID:
		return "build-id"
	case MethodDebugLink:
		return "debuglink"
	case MethodDebuginfod:
		return "debuginfod"
	case MethodMiniDebugInfo:
		return "minidebuginfo"
	}
	return "none"
}

// Attempt is one place Find looked. Err is nil for the accepted candidate;
// errors.Is(Err, fs.ErrNotExist) for a file that is simply absent; anything
// else (an *Error naming the file) for a candidate that was rejected.
type Attempt struct {
	Method Method
	Path   string
	Err    error
}

// Result is what Find found. File is nil when no debug file was found,
// which is normal; the ELF symbol tables remain.
type Result struct {
	// Path and File: the file holding the DWARF (possibly the binary itself,
	// then File is the caller's *elf.File).
	Path   string
	File   *elf.File
	Method Method
	// HasDWARF reports whether File has a .debug_info section (a separate
	// debug file may hold only symbols).
	HasDWARF bool
	// BuildID of the binary (nil if it has none).
	BuildID []byte
	// MiniDebugInfo is the ELF embedded in the binary's .gnu_debugdata, if
	// any: a symbol table of the functions the stripped binary lost. It is
	// loaded even when a full debug file was found; elfsym merges both.
	MiniDebugInfo *elf.File
	// Tried lists every candidate in search order, including failures.
	Tried []Attempt

	binPath string
	opened  *os.File // the file behind File, if Find opened it
}

// Close releases the debug file Find opened (never the caller's binary).
func (r *Result) Close() error {
	if r == nil || r.opened == nil {
		return nil
	}
	err := r.opened.Close()
	r.opened = nil
	return err
}

// Problems returns the rejected candidates (absent files excluded): these
// are worth a warning, because they usually mean a stale or corrupt
// debug package.
func (r *Result) Problems() []error {
	var out []error
	for _, a := range r.Tried {
		if a.Err != nil && !errors.Is(a.Err, fs.ErrNotExist) && !errors.Is(a.Err, debuginfod.ErrDisabled) {
			out = append(out, a.Err)
		}
	}
	return out
}

// Hint is a one-line message telling the user how to get debug information
// for the binary, or "" when DWARF was found. Callers print it once per
// module.
func (r *Result) Hint() string {
	if r.HasDWARF {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "no debug information for %s", r.binPath)
	if r.MiniDebugInfo != nil {
		b.WriteString(" (only MiniDebugInfo symbols)")
	}
	if len(r.BuildID) > 0 {
		id := hex.EncodeToString(r.BuildID)
		fmt.Fprintf(&b, "; install its debug package (looked for %s/.build-id/%s/%s.debug)", DefaultDebugDir, id[:2], id[2:])
		b.WriteString(", or set DEBUGINFOD_URLS (e.g. https://debuginfod.debian.net)")
	} else {
		b.WriteString("; rebuild it with -g (it has no build-id to look a debug file up by)")
	}
	return b.String()
}

// Find locates the debug information for the binary at binPath, already
// opened as f, in gdb's order (see the package comment). It returns an
// error only when f is nil; missing or corrupt debug files are reported in
// Result.Tried. The caller closes the Result.
func Find(ctx context.Context, binPath string, f *elf.File, opts Options) (*Result, error) {
	if f == nil {
		return nil, &Error{Path: binPath, Op: "find debug file", Err: errors.New("no ELF file given")}
	}
	r := &Result{binPath: binPath}
	dirs := opts.DebugDirs
	if dirs == nil {
		dirs = []string{DefaultDebugDir}
	}
	id, err := BuildID(f)
	if err != nil {
		r.Tried = append(r.Tried, Attempt{Method: MethodBuildID, Path: binPath, Err: &Error{Path: binPath, Op: "read build-id", Err: err}})
	}
	r.BuildID = id

	mini, err := OpenMiniDebugInfo(f, opts.MaxMiniDebugInfo)
	if err != nil {
		r.Tried = append(r.Tried, Attempt{Method: MethodMiniDebugInfo, Path: binPath, Err: &Error{Path: binPath, Op: "decode .gnu_debugdata", Err: err}})
	} else if mini != nil {
		r.MiniDebugInfo = mini
	}

	if hasDWARF(f) {
		r.Path, r.File, r.Method, r.HasDWARF = binPath, f, MethodBinary, true
		r.Tried = append(r.Tried, Attempt{Method: MethodBinary, Path: binPath})
		return r, nil
	}

	if len(id) > 0 {
		h := hex.EncodeToString(id)
		for _, d := range dirs {
			p := filepath.Join(d, ".build-id", h[:2], h[2:]+".debug")
			if r.try(MethodBuildID, p, func(c *elf.File, _ string) error { return checkBuildID(c, id) }) {
				return r, nil
			}
		}
	}

	if name, crc, err := DebugLink(f); err != nil {
		r.Tried = append(r.Tried, Attempt{Method: MethodDebugLink, Path: binPath, Err: &Error{Path: binPath, Op: "read .gnu_debuglink", Err: err}})
	} else if name != "" {
		binDir := filepath.Dir(binPath)
		if real, err := filepath.EvalSymlinks(binPath); err == nil {
			binDir = filepath.Dir(real)
		}
		if abs, err := filepath.Abs(binDir); err == nil {
			binDir = abs
		}
		cands := []string{filepath.Join(binDir, name), filepath.Join(binDir, ".debug", name)}
		for _, d := range dirs {
			cands = append(cands, filepath.Join(d, binDir, name))
		}
		binStat, _ := os.Stat(binPath)
		for _, p := range cands {
			check := func(c *elf.File, path string) error {
				if st, err := os.Stat(path); err == nil && binStat != nil && os.SameFile(st, binStat) {
					return ErrSameFile
				}
				got, err := CRC32File(path)
				if err != nil {
					return err
				}
				if got != crc {
					return fmt.Errorf("%w: file has %#08x, %s records %#08x", ErrCRCMismatch, got, binPath, crc)
				}
				return nil
			}
			if r.try(MethodDebugLink, p, check) {
				return r, nil
			}
		}
	}

	if opts.Debuginfod != nil && len(id) > 0 {
		p, err := opts.Debuginfod.DebugInfo(ctx, id)
		if err != nil {
			r.Tried = append(r.Tried, Attempt{Method: MethodDebuginfod, Err: err})
		} else if r.try(MethodDebuginfod, p, func(c *elf.File, _ string) error { return checkBuildID(c, id) }) {
			return r, nil
		} else {
			// A wrong or corrupt download must not be served from the
			// cache forever.
			opts.Debuginfod.Evict(id, "debuginfo")
		}
	}
	return r, nil
}

// try opens candidate path, runs check on it, and on success makes it the
// result. Every outcome is recorded in r.Tried.
func (r *Result) try(m Method, path string, check func(*elf.File, string) error) bool {
	fail := func(op string, err error) bool {
		if errors.Is(err, fs.ErrNotExist) {
			r.Tried = append(r.Tried, Attempt{Method: m, Path: path, Err: err})
			return false
		}
		r.Tried = append(r.Tried, Attempt{Method: m, Path: path, Err: &Error{Path: path, Op: op, Err: err}})
		return false
	}
	osf, err := os.Open(path)
	if err != nil {
		return fail("open", err)
	}
	ef, err := newELFFile(osf)
	if err != nil {
		osf.Close()
		return fail("parse ELF", err)
	}
	if err := check(ef, path); err != nil {
		osf.Close()
		return fail("verify", err)
	}
	r.Path, r.File, r.Method, r.opened = path, ef, m, osf
	r.HasDWARF = hasDWARF(ef)
	r.Tried = append(r.Tried, Attempt{Method: m, Path: path})
	return true
}

func newELFFile(osf *os.File) (f *elf.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("malformed ELF (parser panic: %v)", r)
		}
	}()
	return elf.NewFile(osf)
}

func checkBuildID(f *elf.File, want []byte) error {
	got, err := BuildID(f)
	if err != nil {
		return fmt.Errorf("read build-id: %w", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%w: file has %x, binary has %x", ErrBuildIDMismatch, got, want)
	}
	return nil
}

// hasDWARF: a .debug_info section with contents (a stripped debug file
// keeps the section header as NOBITS).
func hasDWARF(f *elf.File) bool {
	s := f.Section(".debug_info")
	if s == nil {
		s = f.Section(".zdebug_info")
	}
	return s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0
}
