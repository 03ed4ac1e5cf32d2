// Package core is the post-mortem backend of package target: it opens an ELF core
// file (written by the Linux kernel or by gdb's gcore) and presents it as a
// read-only Target with one process and its threads, all stopped where the dump
// caught them.
//
// What comes from where:
//   - threads and their general registers: one NT_PRSTATUS note per thread; the
//     FP/SSE/AVX state from the NT_FPREGSET and NT_X86_XSTATE notes that follow
//     that thread's NT_PRSTATUS;
//   - why the process stopped: NT_SIGINFO (the thread that took the fatal signal);
//   - the process's pid and name: NT_PRSTATUS and NT_PRPSINFO;
//   - the auxiliary vector (vDSO address, entry point, program headers): NT_AUXV;
//   - the memory map: the core's PT_LOAD segments, named by the NT_FILE note;
//   - memory: the bytes the core holds (p_filesz of each PT_LOAD), then the
//     mapped files for what the core left out. Kernel cores usually omit
//     read-only file-backed text; those bytes come from the executable and its
//     libraries, found by path (under Options.Sysroot), by basename in
//     Options.SearchPath, or by build-id through Options.FindByBuildID.
//
// Nothing is guessed. Bytes that neither the core nor a verified file can supply
// read as a *target.MemoryError whose cause, a *MissingError, says why: a
// truncated core, an anonymous region the coredump_filter left out, a missing
// file, a file that is not the one the process mapped (build-id, first page,
// size or mtime disagree), writable or RELRO data the core did not keep (the
// file's bytes are not the process's there). Core.Problems lists every such
// gap and every damaged note or segment.
//
// The core file is memory-mapped and only its headers and notes are read at
// Open; the mapped files are looked for on the first memory read. Opening a
// core of any size and reading its registers therefore costs about the same
// (0.3 ms for a 1 GiB core with a warm page cache; see BenchmarkOpen1GiB).
//
// Memory is a memimage.Image (Core.Image): the mapped files are its sections,
// and its fallback serves the core's own bytes and explains every other
// address.
//
// The note parsers (ParseNotes, ParsePRStatus, ParsePRPSInfo, ParseSigInfo,
// ParseAuxv, ParseFileNote) are exported for tools that read cores without a
// Target; they return *NoteError for malformed input and never panic.
package core
