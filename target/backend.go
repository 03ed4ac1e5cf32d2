package target

import "github.com/sondedbg/sonde/arch"

// Backend is what a live or post-mortem implementation provides. The Target calls
// it after checking IDs and states, so a backend deals only with real work.
// Every method may be called from any goroutine; a backend serialises what it
// must (the ptrace backend runs them on its tracer thread).
//
// A read-only backend (core files) returns ErrUnsupported from the methods that
// change or run the target.
type Backend interface {
	// Arch returns the architecture of the target.
	Arch() *arch.Arch

	// Launch starts a program under the debugger (live backends only).
	Launch(opts LaunchOptions) (*Context, *ProcessIO, error)
	// Attach attaches to a running process and its threads (live backends only).
	Attach(pid int, opts AttachOptions) (*Context, error)
	// Detach removes every patch from proc and lets it run on as if never traced.
	Detach(proc *Context) error
	// Terminate kills a process (or the process of a thread).
	Terminate(ctx *Context) error
	// Signal sends sig to a process or thread.
	Signal(ctx *Context, sig Signal) error

	// ReadMemory reads process memory as the program sees it: software
	// breakpoints are hidden. A short read returns a *MemoryError.
	ReadMemory(proc *Context, addr uint64, p []byte) (int, error)
	// WriteMemory writes process memory; a write under a software breakpoint
	// updates the breakpoint's saved bytes and keeps the breakpoint.
	WriteMemory(proc *Context, addr uint64, p []byte) (int, error)
	// MemoryMap returns a process's mappings.
	MemoryMap(proc *Context) ([]MemoryRegion, error)

	// Registers returns a snapshot of a stopped thread's registers.
	Registers(thread *Context) (*Registers, error)
	// SetRegisters writes a stopped thread's registers (both sets).
	SetRegisters(thread *Context, regs *Registers) error

	// Suspend stops a running thread, or every thread of a process.
	Suspend(ctx *Context) error
	// Resume resumes a stopped thread, or every stopped thread of a process, in
	// one of the modes CanResume offers.
	Resume(ctx *Context, mode ResumeMode, opts ResumeOptions) error
	// CanResume returns the modes the backend itself implements for ctx.
	CanResume(ctx *Context) ResumeModes

	// InsertBreakpoint plants a breakpoint in a process (and, for hardware ones,
	// in every present and future thread).
	InsertBreakpoint(bp *Breakpoint) error
	// RemoveBreakpoint removes it.
	RemoveBreakpoint(bp *Breakpoint) error

	// Close removes every patch, detaches from every live process and releases
	// the backend's resources.
	Close() error
}

// AsyncResumer is a Backend that can take a resume without its caller
// waiting: done gets the outcome once, on the backend's own thread or (when
// the backend is closed) on the caller's. Requests keep their order with the
// backend's other requests.
type AsyncResumer interface {
	ResumeAsync(ctx *Context, mode ResumeMode, opts ResumeOptions, done func(error))
}

// AuxvReader is implemented by backends that can return a process's ELF
// auxiliary vector (live: /proc/PID/auxv; cores: NT_AUXV) as raw bytes.
type AuxvReader interface {
	Auxv(proc *Context) ([]byte, error)
}

// auxvBytes is AuxvReader under another name, for a backend whose Auxv
// method already returns the parsed vector (the core backend).
type auxvBytes interface {
	AuxvBytes(proc *Context) ([]byte, error)
}

// ExecutablePath is implemented by backends that know the path of a process's
// main executable (live: /proc/PID/exe; cores: from NT_FILE and AT_ENTRY).
type ExecutablePath interface {
	Executable(proc *Context) (string, error)
}

// FileLocator is implemented by backends whose mapped files may not be at the
// paths the memory map names: a core file opened on another machine, with a
// sysroot, a moved executable, or a rebuilt file at the recorded path.
// LocateFile returns the file that holds the bytes the process mapped from
// mapped (a path as MemoryMap names it), checked by build-id where the
// backend knows it, or an error saying why there is none; symbol and unwind
// information must then not be read from mapped.
type FileLocator interface {
	LocateFile(proc *Context, mapped string) (string, error)
}
