// Package variables reads what DWARF says about a program's data: the
// scopes active at a pc (function, lexical blocks, inlined calls) and their
// parameters and locals, global and static variables, their C and C++ types,
// and where each value lives (location expressions and location lists,
// frame base, constants, entry values, pieces).
//
// A Reader serves one binary's DWARF: DWARF 4 and 5, type units of both
// (.debug_types and DW_UT_type, followed through DW_FORM_ref_sig8), and
// split DWARF (.dwo files or a .dwp package, each unit read by a child
// Reader): DWARF 5 split units and GNU split DWARF 4 (-gsplit-dwarf
// -gdwarf-4: GNU index forms, DW_LLE_GNU_* lists in .debug_loc.dwo).
// Thread-local variables are located through the frame (TLSFrame), which
// is told which module's storage is meant; package tls finds it in glibc
// processes. Addresses given
// to and returned by a Reader are link-time addresses; values are read at
// run time through a Frame, an interface over memory and the registers of
// one stack frame, so the same code serves live threads, core files and any
// frame of a backtrace (package session implements it over a target).
//
// DIE offsets a Reader hands out (Type.Offset, Variable.Offset) name one DIE
// of one file and can be given back to Reader.Type and Reader.VariableAt.
// The standard library's debug/dwarf decodes DIEs; it is not safe for
// concurrent use, so a Reader serializes its use and caches what it decodes.
//
// Everything read from the file is untrusted: type graphs may refer to
// themselves, expressions may be malformed, counts may be huge. Decoding is
// bounded and reports errors; a value that cannot be known is reported as
// optimized out, never as garbage.
package variables
