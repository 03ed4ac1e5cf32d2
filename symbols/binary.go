package symbols

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/pcache"
	"github.com/sondedbg/sonde/symbols/debugfile"
	"github.com/sondedbg/sonde/symbols/elfsym"
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
	// DeclLine is the line where Function's definition starts in its
	// source (DW_AT_decl_line of the subprogram, or of an inlined call's
	// abstract origin; pprof's Function.start_line), 0 when unknown.
	DeclLine int
	// Inlined is set when this frame's function was inlined into the next one.
	Inlined bool
	// Start is the start of the code range (of the function or inlined call)
	// that contains the address: Address-Start is the offset into it.
	Start uint64
	// FromSymbolTable is set when the name came from the ELF symbol table
	// because no DWARF covers the address.
	FromSymbolTable bool
}

// Options tune how a Binary finds its debug information. The zero value
// (or nil) searches gdb's places: the binary, /usr/lib/debug/.build-id,
// .gnu_debuglink; debuginfod only when Search.Debuginfod is set.
type Options struct {
	// DebugFile is a separate debug file to use instead of searching.
	DebugFile string
	// NoSearch disables the search for a separate debug file.
	NoSearch bool
	// Search says where separate debug files (and dwz supplementary files)
	// are searched for.
	Search debugfile.Options
	// DWODirs are extra directories searched for split-DWARF .dwo files
	// (after DW_AT_comp_dir and the binary's directory).
	DWODirs []string
	// PersistentCache is where inflated copies of large compressed debug
	// sections are kept across runs (see persist.go). nil means
	// pcache.Default(): the user's cache directory, unless SONDE_NO_CACHE=1
	// or SONDE_CACHE_DIR=off.
	PersistentCache *pcache.Cache
	// NoPersistentCache inflates compressed sections in memory on every run.
	NoPersistentCache bool
	// SymbolTableNames names a function DWARF gives no linkage name (a GCC
	// lambda, some template instances, static functions) after the ELF
	// symbol at its entry, demangled, as binutils addr2line does. By
	// default such a function keeps DWARF's spelling, as gdb shows it.
	SymbolTableNames bool
}

// persistentCache returns the cache compressed sections persist in, or nil.
func (o *Options) persistentCache() *pcache.Cache {
	if o.NoPersistentCache {
		return nil
	}
	if o.PersistentCache != nil {
		return o.PersistentCache
	}
	return pcache.Default()
}

// Binary is one ELF object and its debug information. All methods are safe
// for concurrent use.
type Binary struct {
	path  string
	ef    *elfFile
	debug *elfFile   // separate debug file, or nil
	dw    *dwarfFile // nil when there is no DWARF at all

	found *debugfile.Result // what the debug-file search found (MiniDebugInfo), or nil
	// derived holds what other packages build over this binary (Derived),
	// so it lives and goes with the Binary instead of a package-level table.
	derived sync.Map
	hint    string // how to get debug info, when there is none

	symsOnce  sync.Once
	syms      *elfsym.Table
	symsReady atomic.Bool // syms is loaded
	elfNames  bool        // Options.SymbolTableNames

	fsyms funcSymIndex // function symbols by name, before the table is built (funcsyms.go)

	warnMu   sync.Mutex
	warnings []error
}

// Open opens the ELF file at path and locates its debug information.
func Open(path string, opts *Options) (_ *Binary, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { catchFault(path, recover(), &err) }()
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
	b := &Binary{path: path, ef: ef, elfNames: opts.SymbolTableNames}
	pc := opts.persistentCache()
	ef.enablePersist(pc)
	dw, err := newDWARFFile(ef, false)
	if err != nil {
		b.warn(err)
		dw = nil
	}
	if dw == nil || !dw.hasInfo() {
		debugPath := opts.DebugFile
		if debugPath == "" && !opts.NoSearch {
			res, err := debugfile.Find(context.Background(), path, ef.f, opts.Search)
			if err != nil {
				b.warn(err)
			} else {
				b.found = res
				for _, p := range res.Problems() {
					b.warn(p)
				}
				if res.File != nil && res.HasDWARF && res.Path != path {
					debugPath = res.Path
				}
				b.hint = res.Hint()
			}
		}
		if debugPath != "" {
			if dbg, err := openELFFile(debugPath); err != nil {
				b.warn(err)
			} else {
				dbg.enablePersist(pc)
				if ddw, err := newDWARFFile(dbg, false); err != nil {
					b.warn(err)
					dbg.close()
				} else {
					b.debug, dw = dbg, ddw
				}
			}
		}
	}
	if dw != nil && dw.hasInfo() {
		dbgPath := ""
		if b.debug != nil {
			dbgPath = b.debug.name
		}
		dw.splitDWO = &dwoSet{binaryPath: path, dwpPath: debugfile.DWPPath(path, dbgPath), extraDirs: opts.DWODirs}
		if altErr := b.loadAlt(dw, opts, pc); altErr != nil {
			// DWARF whose types, inlined functions' names and strings
			// are in a missing dwz file reads as a mix of right and
			// wrong: gdb drops it and uses the ELF symbols, so do we.
			b.hint = fmt.Sprintf("no usable debug information for %s: %v", path, altErr)
		} else {
			b.dw = dw
			b.hint = ""
		}
	} else if b.hint == "" {
		b.hint = fmt.Sprintf("no debug information for %s: install its debug package or set DEBUGINFOD_URLS", path)
	}
	return b, nil
}

// loadAlt opens the dwz supplementary file named by .gnu_debugaltlink, if
// any. It returns an error when one is named and cannot be found or read.
func (b *Binary) loadAlt(dw *dwarfFile, opts *Options, pc *pcache.Cache) error {
	alt, err := debugfile.FindAltFile(context.Background(), dw.name, dw.ef.f, opts.Search)
	if err != nil {
		b.warn(err)
		return err
	}
	if alt == nil {
		return nil
	}
	defer alt.Close()
	ef, err := openELFFile(alt.Path)
	if err != nil {
		b.warn(err)
		return err
	}
	ef.enablePersist(pc)
	altDW, err := newDWARFFile(ef, false)
	if err != nil {
		b.warn(err)
		ef.close()
		return err
	}
	dw.alt = altDW
	return nil
}

// Hint returns, when the binary has no DWARF, one line saying how to get
// its debug information ("" when it has DWARF).
func (b *Binary) Hint() string { return b.hint }

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
	if b.found != nil {
		errs = append(errs, b.found.Close())
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
	// Warm lookups touch only what earlier lookups decoded onto the Go heap,
	// never the mapped file, so they skip the fault guard.
	if out, err, ok := b.appendDecoded(dst, addr); ok {
		return out, err
	}
	return b.appendFrames(dst, addr)
}

// appendFrames is the general lookup: it may decode units and read the
// symbol table from the mapped file, under the fault guard.
func (b *Binary) appendFrames(dst []Frame, addr uint64) (_ []Frame, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	n := len(dst)
	if b.dw != nil {
		dst, err = b.dw.appendFrames(dst, addr)
	}
	dst, _ = b.finishFrames(dst, n, addr, true)
	return dst, err
}

// appendDecoded answers from already decoded data only; ok is false when
// the answer needs decoding (then nothing was appended).
func (b *Binary) appendDecoded(dst []Frame, addr uint64) (_ []Frame, err error, ok bool) {
	n := len(dst)
	if b.dw != nil {
		dst, err, ok = b.dw.appendDecodedFrames(dst, addr)
		if !ok {
			return dst[:n], nil, false
		}
	}
	dst, ok = b.finishFrames(dst, n, addr, false)
	if !ok {
		return dst[:n], nil, false
	}
	return dst, err, true
}

// finishFrames completes the frames DWARF gave (dst[n:]) from the ELF
// symbols: the whole name where no DWARF function covers addr, keeping any
// line information DWARF had; with Options.SymbolTableNames, a linkage
// name for C++ functions DWARF names without one. (By default those keep
// DWARF's spelling, as gdb shows them, so that a function's inlined and
// out-of-line copies are spelled alike.) With load false it reports false
// instead of reading the symbol table for the first time.
func (b *Binary) finishFrames(dst []Frame, n int, addr uint64, load bool) ([]Frame, bool) {
	if len(dst) > n && dst[n].Function != "" {
		outer := &dst[len(dst)-1]
		if b.elfNames && needsSymbolName(outer) {
			if !load && !b.symsReady.Load() {
				return dst, false
			}
			b.completeLinkageName(outer)
		}
		return dst, true
	}
	if !load && !b.symsReady.Load() {
		return dst, false
	}
	// No DWARF function here: name the address from the ELF symbols, but
	// keep any line information DWARF had.
	var f Frame
	if len(dst) > n {
		f = dst[n]
	}
	if b.symbolFrame(&f, addr) {
		if len(dst) == n {
			dst = append(dst, f)
		} else {
			dst[n] = f
		}
	}
	return dst, true
}

// derivedEntry is one value of Binary.derived, made once.
type derivedEntry struct {
	once sync.Once
	v    any
}

// Derived returns what is kept under key for this binary, making it with mk
// on first use (once, however many ask at the same time). Packages that
// build readers over a binary (variables' Reader) keep them here: they are
// shared by everyone holding the Binary and go when it goes. key should be
// a value of a type private to the caller.
func (b *Binary) Derived(key any, mk func() any) any {
	v, _ := b.derived.LoadOrStore(key, &derivedEntry{})
	e := v.(*derivedEntry)
	e.once.Do(func() { e.v = mk() })
	return e.v
}
