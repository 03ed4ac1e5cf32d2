// Package ptrace is sonde's live Linux backend (x86-64): it debugs running
// processes through ptrace(2) and implements target.Backend. Get a Target with
// New; everything else goes through package target.
//
// # The tracer thread
//
// Linux ties a tracee to the thread that attached it, so every ptrace request
// runs on one goroutine locked to its OS thread, which lives until Close. A hop
// to it costs ~25-30 µs on a VM, so each Backend method is one hop that does a
// whole operation there (stop every thread, step over a breakpoint, collect a
// register snapshot). Wait statuses are collected by a second goroutine that
// looks with waitid(WNOWAIT) and consumes only tracees' statuses, so children
// that the program embedding sonde starts with os/exec are left to their own
// Wait. Memory I/O runs on the caller's goroutine: process_vm_readv for reads,
// /proc/PID/mem for writes (it can write into read-only text).
//
// After doing something the tracer thread stays awake for a moment, polling for
// requests and statuses itself, because work comes in bursts (a client resumes a
// thread right after its stop was reported; a resumed thread traps again soon)
// and waking a sleeping locked thread costs tens of microseconds on a VM.
// Eventpoints (internal breakpoints with an OnHit handler: conditions, hit
// counts, library events) are decided right there on the tracer thread, without
// any hop; Target methods called from a handler run inline.
//
// Every tracee is attached with PTRACE_SEIZE (launched programs too: they start
// with PTRACE_TRACEME and are handed over before their first instruction), with
// clone, fork, vfork, exec and exit events. Stops use PTRACE_INTERRUPT, not
// SIGSTOP; a job-control stop is kept with PTRACE_LISTEN, so a stopped process
// stays stopped while traced and after detach.
//
// # Breakpoints
//
// Software breakpoints are int3 bytes hidden from every read (the saved bytes
// are a translate.Shadow); a write under one updates the saved byte. Resuming
// from a breakpoint never lifts it: the simple instructions functions start with
// (endbr64, nops, push, register moves) are emulated in the registers, direct
// branches and calls are computed by package translate, and every other
// instruction is stepped displaced (displaced.go): relocated into the thread's
// slot of a scratch area sonde maps into the process, single-stepped there while
// the other threads run on, and translated back; any stop in a slot is reported
// at the application's pc. Only system-call instructions, undecodable ones and a
// step that must deliver a signal are single-stepped with the breakpoint lifted
// while every other thread of the process is held. Hardware breakpoints and watchpoints use DR0-DR3
// through PTRACE_POKEUSER in every thread, including threads created later.
// MemoryImage offers the process as a memimage.Image kept in step with the
// breakpoints.
//
// Register snapshots carry the XSAVE area in package arch's layout (Intel's):
// on CPUs whose layout differs (AMD has no MPX, so AVX-512 state sits lower) the
// backend moves the components using CPUID leaf 0xD, both ways.
//
// # When sonde ends
//
// Close (and detaching a process) removes every int3 and debug register and
// detaches every thread; launched programs run on. If sonde is killed with
// SIGKILL, none of that can happen: the kernel detaches every tracee, which
// then runs on with whatever int3 bytes were planted and dies of SIGTRAP when
// it reaches one. That is why sonde never sets PTRACE_O_EXITKILL on processes it
// attached to: a lost debugger must not kill the program it was looking at (the
// breakpoint risk remains). Front ends should turn SIGINT and SIGTERM into Close.
//
// # Stops and their order
//
// Wait statuses are handled one at a time, in the order they were consumed,
// the rest waiting in one queue (b.deferred) where a wait inside the handling
// of one status (stopping the other threads, a step) finds them. An
// interrupt stop that comes with an int3's SIGTRAP still queued (the thread
// was interrupted as it hit a breakpoint) is settled at once: the trap is
// taken and the thread put back on the breakpoint (interrupts.go).
//
// # Known limits
//
// A thread single-stepped over a breakpoint on a system call instruction that
// blocks holds the process's other threads until the call returns (system calls
// are never stepped displaced). The scratch area
// shows in the memory map while the process is traced. A thread in
// uninterruptible sleep (D state) delays Suspend until it wakes. Resuming a
// thread of a job-control-stopped process makes it run (as under gdb); detaching
// leaves the process stopped. Threads stop independently: a breakpoint stops
// the thread that hit it, Suspend of the process stops them all.
package ptrace
