// Package symbols answers what an address in a native Linux program means, and
// the reverse: which addresses a function name or a source line has.
//
// A Binary is one ELF object (executable, shared library, vDSO image) plus
// the debug information that describes it: its own DWARF, or the DWARF of a
// separate debug file, of split-DWARF .dwo/.dwp files and of a dwz
// supplementary file. All addresses are in the file's link-time address space;
// callers that look at a running process subtract the module's load bias
// first.
//
// Everything is read lazily: opening a binary maps the file and reads its ELF
// headers; a compressed debug section is inflated when first used; the first
// lookup indexes compile units by address (from .debug_aranges when present
// and consistent, else from each unit's first DIE); a unit's functions, inline
// tree and line table are decoded the first time an address inside it is
// asked for. Every Binary method is safe for concurrent use.
//
// What is expensive and the same on every run is persisted (package pcache,
// Options.PersistentCache): the inflated debug sections of large files and
// their compile-unit index, keyed by the file's build-id, size and
// modification time, and validated before use (persist.go); and, beside
// them, the demangled names of the functions a run met (persistnames.go).
// Compressed sections are inflated with klauspost/compress into huge-page
// buffers (inflate.go).
//
// Conventions follow gdb: look caller frames up at return address - 1 (see
// Binary.LookupCaller); where several line rows share an address the last
// is_stmt row wins; an address past a line sequence's end has no line; cold
// parts and compiler clones are named from DWARF (their source name); without
// DWARF, ELF symbols are used, but never outside a symbol's size.
package symbols
