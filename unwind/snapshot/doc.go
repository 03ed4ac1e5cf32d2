// Package snapshot is a ready-made client of the unwind engine for copies of
// a thread's state taken earlier: a perf sample (registers + a copy of the
// stack), a saved crash context, or a thread of the current process (package
// unwind/self builds on it).
//
// A Process describes the address space once — the mapped files, served
// through a memimage.Image whose sections are the files (plus any memory the
// client adds, e.g. core segments, or a fallback that reads live memory) — and
// owns the modules, their unwind tables and their symbols, which every thread
// and sample of that address space shares. A Thread adds one register set and
// one stack copy at its address and implements unwind.CopyIn and
// unwind.LookupIP: stack reads come from the copy, everything else (code bytes
// for the engine's checks, data) from the image.
//
//	p, _ := snapshot.New(mappings, nil)   // e.g. from perf's MMAP2 records or ReadMaps
//	th := p.Thread(&regs, stackBytes, sp) // one sample
//	trace, err := th.Backtrace(unwind.BacktraceOptions{})
package snapshot
