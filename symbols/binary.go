package symbols

import (
	"debug/elf"
	"strings"

	"errors"
	"github.com/ianlancetaylor/demangle"
	"os"
	"path/filepath"
	"sync"
)

// Frame is one source-level frame at an address. Lookups return the inline
// chain innermost first: every frame but the last has Inlined set, and the
// location of an outer frame is the call site of the frame before it.
type Frame struct {
	// Function is the name as gdb prints it: the demangled linkage name for
	// C++ and Rust (with parameter list), else the DWARF name qualified by its
	// namespaces and classes. Empty when unknown.
	Function string
	// LinkageName is the mangled name from DW_AT_linkage_name or the ELF
	// symbol, when there is one.
	LinkageName string
	// File is the source file's full path as recorded in DWARF ("" unknown).
	File string
	// Line and Column are 1-based; 0 means unknown (or line 0 in DWARF: code
	// that belongs to no line).
	Line, Column int
	// Discriminator distinguishes basic blocks of one line (0: none).
	Discriminator int
	// Inlined is set when this frame's function was inlined into the next one.
	Inlined bool
	// Start is the start of the code range (of the function or inlined call)
	// that contains the address: Address-Start is the offset into it.
	Start uint64
	// FromSymbolTable is set when the name came from the ELF symbol table
	// because no DWARF covers the address.
	FromSymbolTable bool
}

// Options tune how a Binary finds its debug information.
type Options struct {
	// DebugFile is a separate debug file holding the DWARF (as found by
	// build-id or .gnu_debuglink); empty to use only the binary's own DWARF,
	// unless FindDebugFile finds one.
	DebugFile string
	// FindDebugFile, when set and DebugFile is empty, is asked for a separate
	// debug file when the binary itself has no DWARF. It returns "" when
	// there is none.
	FindDebugFile func(path string, f *elf.File) (string, error)
	// DWODirs are extra directories searched for split-DWARF .dwo files
	// (after DW_AT_comp_dir and the binary's directory).
	DWODirs []string
}

// Binary is one ELF object and its debug information. All methods are safe
// for concurrent use.
type Binary struct {
	path    string
	ef      *elfFile
	debug   *elfFile   // separate debug file, or nil
	dw      *dwarfFile // nil when there is no DWARF at all
	symsErr error

	symsOnce sync.Once
	syms     symbolSource

	warnMu   sync.Mutex
	warnings []error
}

// Open opens the ELF file at path and locates its debug information.
func Open(path string, opts *Options) (*Binary, error) {
	ef, err := openELFFile(path)
	if err != nil {
		return nil, err
	}
	b, err := newBinary(path, ef, opts)
	if err != nil {
		ef.close()
		return nil, err
	}
	return b, nil
}

// OpenBytes opens an ELF image held in memory (the vDSO read from a target);
// name is used in errors. data must not change while the Binary is in use.
func OpenBytes(name string, data []byte, opts *Options) (*Binary, error) {
	ef, err := newELFFile(name, data, false)
	if err != nil {
		return nil, err
	}
	return newBinary(name, ef, opts)
}

func newBinary(path string, ef *elfFile, opts *Options) (*Binary, error) {
	if opts == nil {
		opts = &Options{}
	}
	b := &Binary{path: path, ef: ef}
	dw, err := newDWARFFile(ef, false)
	if err != nil {
		b.warn(err)
		dw = nil
	}
	if dw == nil || !dw.hasInfo() {
		debugPath := opts.DebugFile
		if debugPath == "" && opts.FindDebugFile != nil {
			if debugPath, err = opts.FindDebugFile(path, ef.f); err != nil {
				b.warn(err)
			}
		}
		if debugPath != "" {
			if dbg, err := openELFFile(debugPath); err != nil {
				b.warn(err)
			} else if ddw, err := newDWARFFile(dbg, false); err != nil {
				b.warn(err)
				dbg.close()
			} else {
				b.debug, dw = dbg, ddw
			}
		}
	}
	if dw != nil && dw.hasInfo() {
		dw.splitDWO = &dwoSet{binaryPath: path, extraDirs: opts.DWODirs}
		b.loadAlt(dw)
		b.dw = dw
	}
	return b, nil
}

// loadAlt opens the dwz supplementary file named by .gnu_debugaltlink, if any.
func (b *Binary) loadAlt(dw *dwarfFile) {
	link, err := dw.ef.section(".gnu_debugaltlink")
	if err != nil || len(link) == 0 {
		return
	}
	name := link
	for i, c := range link {
		if c == 0 {
			name = link[:i]
			break
		}
	}
	p := string(name)
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(dw.name), p)
	}
	ef, err := openELFFile(p)
	if err != nil {
		b.warn(err)
		return
	}
	alt, err := newDWARFFile(ef, false)
	if err != nil {
		b.warn(err)
		ef.close()
		return
	}
	dw.alt = alt
}

func (b *Binary) warn(err error) {
	b.warnMu.Lock()
	b.warnings = append(b.warnings, err)
	b.warnMu.Unlock()
}

// Warnings returns the non-fatal problems met so far (unreadable parts of
// the debug information, missing .dwo files): each names its file.
func (b *Binary) Warnings() []error {
	b.warnMu.Lock()
	defer b.warnMu.Unlock()
	out := append([]error(nil), b.warnings...)
	if b.dw != nil {
		b.dw.index()
		out = append(out, b.dw.indexErrs...)
		b.dw.warnMu.Lock()
		out = append(out, b.dw.warns...)
		b.dw.warnMu.Unlock()
	}
	return out
}

// Path returns the path the binary was opened from.
func (b *Binary) Path() string { return b.path }

// ELF returns the parsed ELF headers of the binary.
func (b *Binary) ELF() *elf.File { return b.ef.f }

// HasDWARF reports whether DWARF debug information was found.
func (b *Binary) HasDWARF() bool { return b.dw != nil }

// DebugFile returns the path of the file the DWARF came from ("" none).
func (b *Binary) DebugFile() string {
	if b.dw == nil {
		return ""
	}
	return b.dw.name
}

// Close releases the files. Frames returned earlier stay valid.
func (b *Binary) Close() error {
	var errs []error
	if b.dw != nil && b.dw.splitDWO != nil {
		s := b.dw.splitDWO
		s.mu.Lock()
		for _, f := range s.files {
			errs = append(errs, f.ef.close())
		}
		s.mu.Unlock()
		if s.dwp != nil {
			errs = append(errs, s.dwp.file.ef.close())
		}
	}
	if b.dw != nil && b.dw.alt != nil {
		errs = append(errs, b.dw.alt.ef.close())
	}
	if b.debug != nil {
		errs = append(errs, b.debug.close())
	}
	errs = append(errs, b.ef.close())
	return errors.Join(errs...)
}

// Lookup returns the frames at addr (a link-time address), innermost first.
// For a caller frame, whose pc is a return address, use LookupCaller. An
// address nothing describes gives no frames and no error; an error means
// the debug information covering addr is unreadable (names the file).
func (b *Binary) Lookup(addr uint64) ([]Frame, error) {
	return b.AppendFrames(nil, addr)
}

// LookupCaller returns the frames for a caller frame whose return address is
// ret: it looks up ret-1, which lies in the call instruction, as gdb does
// (the return address may already belong to the next line or function).
func (b *Binary) LookupCaller(ret uint64) ([]Frame, error) {
	if ret == 0 {
		return nil, nil
	}
	return b.AppendFrames(nil, ret-1)
}

// AppendFrames is Lookup appending to dst, for callers that reuse a buffer.
func (b *Binary) AppendFrames(dst []Frame, addr uint64) ([]Frame, error) {
	var err error
	n := len(dst)
	if b.dw != nil {
		dst, err = b.dw.appendFrames(dst, addr)
	}
	if len(dst) > n && dst[n].Function != "" {
		b.completeLinkageName(&dst[len(dst)-1])
		return dst, err
	}
	// No DWARF function here: name the address from the ELF symbols, but
	// keep any line information DWARF had.
	if s, ok := b.symbols().lookup(addr); ok {
		if len(dst) == n {
			dst = append(dst, Frame{})
		}
		f := &dst[n]
		f.Function, f.LinkageName, f.Start, f.FromSymbolTable = s.display, s.name, s.start, true
	}
	return dst, err
}

func (b *Binary) symbols() symbolSource {
	b.symsOnce.Do(func() {
		var dbg *elf.File
		if b.debug != nil {
			dbg = b.debug.f
		}
		var err error
		b.syms, err = loadSymbols(b.ef.f, dbg)
		if err != nil {
			b.warn(&Error{File: b.path, Op: "read ELF symbols", Err: err})
		}
	})
	return b.syms
}

// fileExists is a helper for debug-file searches.
func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// completeLinkageName gives an out-of-line function frame that DWARF names
// without a linkage name (GCC omits it for lambdas and some templates) the
// mangled name of the ELF symbol starting at the same address, so that C++
// names are fully qualified. Clone suffixes (".cold", ".isra.0") are not
// part of the source name and are dropped.
func (b *Binary) completeLinkageName(f *Frame) {
	if f.LinkageName != "" || f.Inlined || f.Start == 0 {
		return
	}
	s, ok := b.symbols().lookup(f.Start)
	if !ok || s.start != f.Start || !(strings.HasPrefix(s.name, "_Z") || strings.HasPrefix(s.name, "_R")) {
		return
	}
	name := s.name
	if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	if full, err := demangle.ToString(name); err == nil {
		f.Function, f.LinkageName = withoutReturnType(name, full), name
	}
}
