// Package probes puts fast probes into a live process: a probed instruction
// is replaced by a 5-byte jmp rel32 into a trampoline in a code cache that
// sonde maps within ±2 GiB of the module (injected mmap, PIE included). The
// trampoline saves what its payload clobbers, runs the payload (a lock-free
// 64-bit counter that sonde reads from the cache), restores, runs the
// instructions the jump covered (relocated by translate.Relocate in Inline
// mode: a call pushes the application's return address) and jumps back. A
// hit costs nanoseconds instead of a trap to the debugger.
//
// # Payloads
//
//   - count (AddCount): `lock incq` of a 64-bit counter in the cache, the
//     flags saved below the red zone;
//   - latency (AddLatency): the entry stores (rsp, TSC) in a slot table
//     hashed by rsp; exit payloads before every ret and tail jump (found by
//     decoding the function) look the slot up by the same rsp and add the
//     elapsed ticks to a log2 histogram. No return address is replaced, so
//     exceptions, longjmp and backtraces are untouched; calls they leave are
//     not timed;
//   - conditions (AddCountIf, AddTrapIf): a register or a global compared with
//     a constant in the payload; only when it holds the counter moves, or the
//     thread reaches a nop that carries a breakpoint of the backend's (a trap
//     to sonde, e.g. to print arguments).
//
// A jump probe left behind by a sonde killed with SIGKILL keeps working (it
// counts into a cache nobody reads): unlike an int3 it never kills the
// program.
//
// # Site analysis
//
// A site is patched only when it is safe: the function containing it is
// decoded whole (bounds from the ELF symbol table), the patched range covers
// whole instructions that can run elsewhere, and no direct branch in the
// function targets the inside of the range. Otherwise the probe is a
// breakpoint (an int3 whose hits are counted in sonde) and Probe.Fallback
// says why. Indirect branches (jump tables, computed gotos) cannot be
// followed statically: a jump table into the middle of a patched range is a
// residual risk, as in every jump-patching tool; functions containing an
// indirect jump that is not a tail call are therefore not patched.
//
// # Installation and removal
//
// Both run with every thread of the process stopped (ptrace.Backend.Halt).
// Threads whose PC is inside a range about to be patched are single-stepped
// out of it first; on removal, threads inside a trampoline are stepped out
// of it before the original bytes go back, and the cache is unmapped only
// when no thread is inside it. Removal runs in reverse order of
// installation. Detaching (Detach, Close, hence SIGINT/SIGTERM in the CLI)
// removes every probe and frees every cache page through the backend's
// detach hook, so the text of every module is byte-identical to its file
// afterwards.
//
// # Translation
//
// Every trampoline has a translation table (Table): for each range of cache
// addresses, the application PC it stands for, whether the registers there
// equal the application's (the stack pointer and flags adjusted as recorded),
// and where the payload keeps the registers it spilled; Set.Translate maps a
// cache PC back. Caches are registered with the backend as generated code
// (ptrace.Backend.AddGenerated): a thread suspended or stopped by an
// asynchronous signal there is single-stepped out to application code before
// the stop is reported, so no client ever sees a cache PC or a spilled
// register. Every trampoline's table is also in the address space's
// translate.Table (ptrace.Halted.Translations), so that any other stop there
// — a fault in a relocated instruction or in a payload, a conditional stop's
// trap — is reported at the application pc with the application's registers
// (spilled ones read back from the payload's save area), and library users'
// restore-state hooks (target.Target.AddRestoreHook) run for it.
//
// # Conditional stops and recording
//
// AddStopIf compiles a condition (Expr: comparisons of registers, frame
// slots or globals with constants, && and ||; package ccond makes one from a
// C condition) into the payload; where it holds, the payload restores every
// register and reaches a breakpoint of the backend's, so the stop is the
// application's state at the probed pc, and resuming from it goes on at the
// relocated instructions (ptrace.Backend.AddResumeRedirect) rather than
// through the payload again. AddRecordIf writes values into a bounded ring
// buffer in the cache at each hit where its condition holds, drained by a
// goroutine without stopping the program; overwritten records are counted
// (Ring.Lost).
package probes
