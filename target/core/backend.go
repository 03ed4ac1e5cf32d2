package core

import (
	"errors"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/target"
)

// This file implements target.Backend. A core is read-only: everything that
// would run or change the process returns an ErrUnsupported *target.Error.

var _ target.Backend = (*Core)(nil)

func unsupported(op string, ctx *target.Context) error {
	var id target.ID
	if ctx != nil {
		id = ctx.ID()
	}
	return target.Errorf(target.CodeUnsupported, op, id, errReadOnly)
}

// Arch returns x86-64, the only architecture Open accepts.
func (c *Core) Arch() *arch.Arch { return arch.AMD64 }

func (c *Core) Launch(target.LaunchOptions) (*target.Context, *target.ProcessIO, error) {
	return nil, nil, unsupported("launch", nil)
}
func (c *Core) Attach(int, target.AttachOptions) (*target.Context, error) {
	return nil, unsupported("attach", nil)
}
func (c *Core) Detach(proc *target.Context) error { return unsupported("detach", proc) }
func (c *Core) Terminate(ctx *target.Context) error {
	return unsupported("terminate", ctx)
}
func (c *Core) Signal(ctx *target.Context, _ target.Signal) error {
	return unsupported("signal", ctx)
}
func (c *Core) WriteMemory(proc *target.Context, _ uint64, _ []byte) (int, error) {
	return 0, unsupported("write memory", proc)
}
func (c *Core) SetRegisters(thread *target.Context, _ *target.Registers) error {
	return unsupported("write registers", thread)
}
func (c *Core) Suspend(ctx *target.Context) error { return unsupported("suspend", ctx) }
func (c *Core) Resume(ctx *target.Context, _ target.ResumeMode, _ target.ResumeOptions) error {
	return unsupported("resume", ctx)
}

// CanResume returns no modes: a core never runs.
func (c *Core) CanResume(*target.Context) target.ResumeModes { return 0 }

func (c *Core) InsertBreakpoint(bp *target.Breakpoint) error {
	return unsupported("insert breakpoint", bp.Process)
}
func (c *Core) RemoveBreakpoint(bp *target.Breakpoint) error {
	return unsupported("remove breakpoint", bp.Process)
}

// ReadMemory reads the dumped process's memory. Bytes the core and the mapped
// files cannot supply end the read with a *target.MemoryError whose Err is a
// *MissingError saying why.
func (c *Core) ReadMemory(proc *target.Context, addr uint64, p []byte) (int, error) {
	if proc != c.process || c.closed.Load() {
		return 0, target.Errorf(target.CodeInvalidContext, "read memory", proc.ID(), nil)
	}
	c.ensureFiles()
	n, err := c.image.ReadFull(p, asid, addr)
	if err == nil {
		return n, nil
	}
	me := &target.MemoryError{Addr: addr + uint64(n), Valid: n, Err: err}
	var re *memimage.ReadError
	if errors.As(err, &re) {
		me.Addr, me.Valid, me.Err = re.Addr, re.Valid, re.Err
	}
	var miss *MissingError
	if errors.As(me.Err, &miss) {
		me.Err = miss
	}
	return n, me
}

// MemoryMap returns the dumped process's mappings.
func (c *Core) MemoryMap(proc *target.Context) ([]target.MemoryRegion, error) {
	if proc != c.process {
		return nil, target.Errorf(target.CodeInvalidContext, "memory map", proc.ID(), nil)
	}
	c.ensureFiles()
	return append([]target.MemoryRegion(nil), c.regions...), nil
}

// Registers returns a thread's registers as the core recorded them.
func (c *Core) Registers(thread *target.Context) (*target.Registers, error) {
	th := c.byTID[thread.TID()]
	if th == nil || th.Context != thread {
		return nil, target.Errorf(target.CodeInvalidContext, "read registers", thread.ID(), nil)
	}
	return th.Registers(), nil
}

// Close unmaps the core and the mapped files (unless they live in a cache
// the caller shared through Options.Cache); reads fail afterwards.
func (c *Core) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if c.ownCache != nil {
		c.ownCache.SetLimit(0) // a limit of 0 keeps nothing mapped
	}
	return c.mem.close()
}
