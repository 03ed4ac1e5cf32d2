// Package elfsym turns a module's ELF symbol tables into a lookup index:
// address → symbol + offset, and name → symbols. It is the fallback
// symbolizer when a module has no DWARF, and the source of names DWARF does
// not give (PLT stubs, assembly functions).
//
// A Table merges .symtab and .dynsym of one or more ELF files that describe
// the same module (the binary, its separate debug file, its MiniDebugInfo)
// and adds synthetic "name@plt" symbols for the x86-64 PLT stubs found in
// .plt, .plt.sec and .plt.got, named after the relocation of the GOT slot
// each stub jumps through (as binutils and gdb do).
//
// Addresses are link-time addresses as written in the ELF file: callers
// subtract a module's load bias before looking up and add it back after.
//
// # Never a wrong name
//
// Lookup returns a symbol only when the address lies inside it:
// Addr <= addr < Addr+Size. A zero-size symbol (an assembly label,
// crtstuff's register_tm_clones) has no end of its own: it names the
// addresses after it up to the next symbol, within its section, as in gdb,
// addr2line and llvm-symbolizer — unless it lies inside a sized symbol,
// which then names even the label's own address (gdb and elfutils do so:
// qemu's label safe_syscall_end, the pc after the syscall in
// safe_syscall_base, is safe_syscall_base+37; addr2line says the label). An
// address in a gap after a sized symbol has no name; naming it after the
// nearest preceding exported symbol is the classic symbolizer bug this
// package exists to avoid.
//
// # Which name, when several symbols share an address
//
// Aliases are common (clone3 and __clone3, write and __libc_write,
// clock_gettime and __vdso_clock_gettime). The preferred symbol is chosen by
// these rules, in order, so the choice is stable and explainable:
//
//  1. a symbol whose size covers the address beats a zero-size one;
//  2. a global or weak symbol beats a local one (the name a user can call);
//  3. fewer leading underscores (the public name, not the implementation's);
//  4. GLOBAL beats WEAK;
//  5. FUNC/IFUNC/OBJECT beat NOTYPE;
//  6. .symtab beats .dynsym beats a synthetic PLT name;
//  7. the shorter name, then the lexically smaller one.
//
// # Names
//
// Symbol.Name is the linkage name with any symbol-version suffix
// ("@GLIBC_2.2.5", "@@GLIBC_2.17") moved into Symbol.Version. Demangled
// C++ and Rust names come from Demangle, which caches its results.
package elfsym
