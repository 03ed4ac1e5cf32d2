package ptrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate"
)

// Displaced stepping: the instruction under a breakpoint is copied, relocated
// (package translate), into a slot of a scratch area sonde maps into the
// process, and the thread single-steps the copy while every other thread keeps
// running past the int3 that never moves. Direct branches are not stepped at
// all: translate computes where they go. The step's way back goes through the
// address space's translation table, so any stop inside the slot (a fault, a
// signal, an interrupt) is reported at the application's pc with its registers.
//
// The scratch area is one anonymous PROT_READ|PROT_EXEC mapping per address
// space (64 KiB, a 64-byte slot per thread), mapped with an injected mmap
// placed just below the executable mapping of the first breakpoint stepped this
// way (so that rip-relative operands there are re-biased; elsewhere they go
// through a scratch register) and MADV_DONTFORK (fork children never inherit
// it). The injected system call runs from the program's entry point, where gdb
// keeps its own displaced-stepping pad: two bytes written there and put back.
// Detach unmaps the area the same way.

const (
	scratchSize = 64 << 10
	slotSize    = 64
)

// scratchArea is an address space's displaced-stepping area.
type scratchArea struct {
	base    uint64
	slots   map[int]uint64 // tid -> slot
	free    []uint64
	next    uint64            // next never-used slot
	written map[uint64][]byte // what each slot holds (rewritten only on change)
}

// displacedStats counts how breakpoints were passed (read by tests and
// benchmarks on the tracer thread's behalf; written only there).
type displacedStats struct {
	stepped, emulatedBranches, fallbacks, held int
	scratchRegs                                int // steps that borrowed a register for rip
	translatedStops                            int // other stops in a slot, translated
	int3TrapsTaken                             int // interrupt stops that came with an int3's SIGTRAP queued (pendingtrap.go)
	areaBase                                   uint64
	lastFallback                               string
}

// slotFor returns th's slot, mapping the area first if needed.
func (b *Backend) slotFor(th *thread, near uint64) (uint64, error) {
	owner := th.proc.memOwner
	if owner.scratchErr != nil {
		return 0, owner.scratchErr
	}
	if owner.scratch == nil {
		base, err := b.mapScratch(th, near)
		if err != nil {
			if !errors.Is(err, errInjectInterrupted) {
				owner.scratchErr = err // the next hit would fail the same way
			}
			return 0, err
		}
		b.dstats.areaBase = base
		owner.scratch = &scratchArea{base: base, slots: map[int]uint64{}, next: base, written: map[uint64][]byte{}}
	}
	a := owner.scratch
	if s, ok := a.slots[th.tid]; ok {
		return s, nil
	}
	var s uint64
	switch {
	case len(a.free) > 0:
		s, a.free = a.free[len(a.free)-1], a.free[:len(a.free)-1]
	case a.next+slotSize <= a.base+scratchSize:
		s, a.next = a.next, a.next+slotSize
	default:
		return 0, errors.New("every displaced-stepping slot is in use")
	}
	a.slots[th.tid] = s
	return s, nil
}

// releaseSlot frees a gone thread's slot.
func (p *process) releaseSlot(tid int) {
	if a := p.memOwner.scratch; a != nil {
		if s, ok := a.slots[tid]; ok {
			delete(a.slots, tid)
			a.free = append(a.free, s)
		}
	}
}

// mapScratch maps the scratch area with a system call injected into th.
func (b *Backend) mapScratch(th *thread, near uint64) (uint64, error) {
	const (
		sysMmap, sysMadvise                   = 9, 28
		mapPrivateAnon, mapFixedNoRepl        = 0x22, 0x100000
		protRX, madvDontfork                  = 5, 10
		maxErrno                       uint64 = 4095
	)
	owner := th.proc.memOwner
	base := owner.scratchUnadvised
	var err error
	hints := scratchHints(th.proc.pid, near)
	if b.scratchFar {
		hints = []uint64{0}
	}
	if base != 0 {
		hints = nil // mapped already, by an earlier try
	}
	for _, hint := range hints {
		flags := uint64(mapPrivateAnon)
		if hint != 0 {
			flags |= mapFixedNoRepl
		}
		base, err = b.injectSyscall(th, sysMmap, hint, scratchSize, protRX, flags, ^uint64(0), 0)
		if err != nil {
			return 0, err
		}
		if base <= ^uint64(0)-maxErrno {
			break
		}
		err = fmt.Errorf("mmap of the displaced-stepping area at %#x: %w", hint, unix.Errno(-base))
	}
	if err != nil {
		return 0, err
	}
	r, err := b.injectSyscall(th, sysMadvise, base, scratchSize, madvDontfork)
	if errors.Is(err, errInjectInterrupted) {
		// The thread's own status waits to be handled first: no munmap can
		// be injected now (resuming the thread would drop that status's
		// signal). The area stays, and the next try goes on from it.
		owner.scratchUnadvised = base
		return 0, err
	}
	owner.scratchUnadvised = 0
	if err != nil || r != 0 {
		b.injectSyscall(th, 11, base, scratchSize) // munmap
		return 0, fmt.Errorf("madvise(MADV_DONTFORK) of the displaced-stepping area: %v %d", err, int64(r))
	}
	return base, nil
}

// scratchHints returns where to try mapping the area: just below the mapping
// holding near, then anywhere.
func scratchHints(pid int, near uint64) []uint64 {
	regions, err := readMaps(pid)
	var hints []uint64
	if err == nil {
		for i, r := range regions {
			if near < r.Addr || near >= r.Addr+r.Size {
				continue
			}
			// The first mapping of the same file: below it is usually free.
			lo := r.Addr
			for k := i - 1; k >= 0 && regions[k].FileName == r.FileName && r.FileName != ""; k-- {
				lo = regions[k].Addr
			}
			if lo > 1<<24 {
				hints = append(hints, (lo-scratchSize-(1<<20))&^0xfff)
			}
			hints = append(hints, (r.Addr+r.Size+(64<<20))&^0xfff)
		}
	}
	return append(hints, 0)
}

// errInjectInterrupted: something else stopped the thread first (a signal):
// the injection may be tried again at another stop.
var errInjectInterrupted = errors.New("injected system call interrupted")

// injectSyscall runs one system call in th, which is in a ptrace-stop, and
// puts its registers and the entry point's bytes back. It returns the call's
// raw result (a negated errno on failure).
func (b *Backend) injectSyscall(th *thread, nr uint64, args ...uint64) (uint64, error) {
	if err := th.loadRegs(); err != nil {
		return 0, err
	}
	entry, err := auxvEntry(th.proc.pid)
	if err != nil {
		return 0, err
	}
	owner := th.proc.memOwner
	var orig [2]byte
	if n, err := readRaw(th.proc, entry, orig[:]); n != 2 {
		return 0, memoryError(entry, n, err)
	}
	saved := th.regs
	savedDirty := th.regsDirty
	owner.memMu.RLock()
	mem := owner.mem
	owner.memMu.RUnlock()
	if mem == nil {
		return 0, unix.ESRCH
	}
	if _, err := mem.WriteAt([]byte{0x0f, 0x05}, int64(entry)); err != nil {
		return 0, err
	}
	defer mem.WriteAt(orig[:], int64(entry))
	argOff := []int{112, 104, 96, 56, 72, 64} // rdi rsi rdx r10 r8 r9
	for i, a := range args {
		th.setReg(argOff[i], a)
	}
	th.setReg(80, nr)          // rax
	th.setReg(120, ^uint64(0)) // orig_rax: not in a system call
	th.setReg(offRIP, entry)
	th.setReg(offEFLAGS, th.reg(offEFLAGS)&^(1<<8)) // no TF
	restore := func() error {
		th.regs, th.haveRegs, th.regsDirty = saved, true, true
		err := th.flushRegs()
		th.regsDirty = savedDirty
		return err
	}
	if err := th.flushRegs(); err != nil {
		restore()
		return 0, err
	}
	var ws unix.WaitStatus
	answered := false
	for try := 0; try < 4; try++ {
		if err = singleStep(th.tid, 0); err != nil {
			break
		}
		th.running = true
		ws, err = b.waitForUntil(th.tid, time.Now().Add(2*time.Second))
		th.running = false
		th.invalidateRegs()
		if err != nil || !ws.Stopped() || int(ws)>>16 != eventStop {
			break
		}
		answered = true // a PTRACE_INTERRUPT left over: the call did not run yet
	}
	if answered {
		defer b.answeredInterrupt(th)
	}
	if err != nil {
		return 0, err
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP || int(ws)>>16 != 0 {
		// Something else stopped it (a signal, its death): the status is the
		// program's, handled in order; its registers go back first.
		err = restore()
		b.deferred = append([]waitEvent{{th.tid, ws}}, b.deferred...)
		return 0, fmt.Errorf("system call %d, status %#x (%v): %w", nr, int(ws), err, errInjectInterrupted)
	}
	if err := th.loadRegs(); err != nil {
		return 0, err
	}
	ret := th.reg(80)
	if end := th.reg(offRIP); end != entry+2 {
		restore()
		return 0, fmt.Errorf("injected system call %d ended at %#x, not after the syscall at %#x", nr, end, entry)
	}
	return ret, restore()
}

// auxvEntry returns the program's entry point (AT_ENTRY).
func auxvEntry(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	for i := 0; i+16 <= len(data); i += 16 {
		if binary.LittleEndian.Uint64(data[i:]) == 9 { // AT_ENTRY
			return binary.LittleEndian.Uint64(data[i+8:]), nil
		}
	}
	return 0, errors.New("no AT_ENTRY in the auxiliary vector")
}

// unmapScratch removes the area before detach; th is any stopped thread of
// the address space.
func (b *Backend) unmapScratch(p *process, th *thread) {
	// A dying process (killed: its leader a zombie waiting for the other
	// threads) needs no unmapping, and a thread that cannot run would never
	// report the injected call's end.
	if st := taskState(p.pid); st == 'Z' || st == 'X' || st == 0 || (th != nil && taskState(th.tid) != 't') {
		th = nil
	}
	base := p.scratchUnadvised
	if a := p.scratch; a != nil {
		base = a.base
	}
	if base != 0 && th != nil {
		for try := 0; try < 3; try++ {
			_, err := b.injectSyscall(th, 11, base, scratchSize)
			if !errors.Is(err, errInjectInterrupted) {
				break
			}
			// A signal came first: keep it for delivery at detach, and
			// try again from that stop.
			if ws, ok := b.takeDeferred(th.tid); ok {
				b.settle(th, ws)
			}
			if th.running || b.threads[th.tid] != th {
				break
			}
		}
	}
	p.scratch, p.scratchErr, p.scratchUnadvised = nil, nil, 0
}

// regsOf returns th's registers in translate's form.
func regsOf(th *thread) translate.Regs {
	var r translate.Regs
	for i, off := range encodingOffset {
		r.GPR[i] = th.reg(off)
	}
	r.RIP, r.RFLAGS = th.reg(offRIP), th.reg(offEFLAGS)
	return r
}

// setRegsFrom writes the registers of r that differ into th's cache.
func setRegsFrom(th *thread, r translate.Regs) {
	for i, off := range encodingOffset {
		if th.reg(off) != r.GPR[i] {
			th.setReg(off, r.GPR[i])
		}
	}
	if th.reg(offRIP) != r.RIP {
		th.setReg(offRIP, r.RIP)
	}
	if th.reg(offEFLAGS) != r.RFLAGS {
		th.setReg(offEFLAGS, r.RFLAGS)
	}
}

// procMemory adapts a process to translate.Memory.
type procMemory struct {
	b *Backend
	p *process
}

func (m procMemory) ReadMemory(addr uint64, buf []byte) (int, error) {
	return m.b.readMemory(m.p, addr, buf)
}

func (m procMemory) WriteMemory(addr uint64, data []byte) (int, error) {
	return writeWords(m.p.pid, addr, data)
}

// writeWords writes target memory with process_vm_writev (stack words: no
// need for /proc/PID/mem's force).
func writeWords(pid int, addr uint64, data []byte) (int, error) {
	if len(data) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: &data[0]}}
	local[0].SetLen(len(data))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(data)}}
	return unix.ProcessVMWritev(pid, local, remote, 0)
}

// displacedStep passes the breakpoint at th's pc without lifting it. done is
// false when the instruction cannot go this way (nothing was changed: the
// caller falls back to stepping in place with the other threads held);
// otherwise ok and err are stepOverBreakpoint's results.
func (b *Backend) displacedStep(th *thread) (done, ok bool, err error) {
	if err := th.loadRegs(); err != nil {
		return false, false, nil
	}
	owner := th.proc.memOwner
	pc := th.reg(offRIP)
	fallback := func(why string) (bool, bool, error) {
		b.dstats.fallbacks++
		b.dstats.lastFallback = why
		return false, false, nil
	}
	var code [translate.MaxInsnLen]byte
	n, _ := b.readMemory(th.proc, pc, code[:])
	slot, serr := b.slotFor(th, pc)
	if errors.Is(serr, errInjectInterrupted) {
		// The thread stopped for something else while the area was being
		// mapped: that status is handled first (the int3 is hit again later).
		return true, false, nil
	}
	if serr != nil {
		return fallback(serr.Error())
	}
	r, rerr := translate.Relocate(code[:n], pc, slot, translate.Displaced)
	if rerr != nil {
		return fallback(rerr.Error())
	}
	if r.Kind == translate.KindSystem {
		// A system call could block the tracer thread in the step; int3 and
		// int n are the program's own traps.
		return fallback("system instruction " + r.Op.String())
	}
	if next, rcx, push, isBranch := r.Branch(th.reg(offEFLAGS), th.reg(encodingOffset[1])); isBranch {
		if push {
			sp := th.reg(offRSP) - 8
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], r.Next)
			if n, _ := writeWords(th.proc.pid, sp, w[:]); n != 8 {
				return fallback("return address not writable")
			}
			th.setReg(offRSP, sp)
		}
		th.setReg(encodingOffset[1], rcx)
		th.setReg(offRIP, next)
		b.dstats.emulatedBranches++
		return true, true, nil
	}
	if err := b.writeSlot(owner, slot, r.Code); err != nil {
		return fallback(err.Error())
	}
	var appScratch uint64
	if r.Scratch != translate.NoReg {
		b.dstats.scratchRegs++
		appScratch = th.reg(encodingOffset[r.Scratch])
		th.setReg(encodingOffset[r.Scratch], r.ScratchValue)
	}
	entry := r.Entry(appScratch, "displaced step")
	if err := owner.tt.Add(entry); err != nil {
		return fallback(err.Error())
	}
	defer owner.tt.Remove(slot)
	th.setReg(offRIP, slot)
	b.dstats.stepped++
	ws, werr := b.stepCopy(th, r)
	// The step was sonde's own: a stop met on the way (handled later) must
	// not think the thread was single-stepping when it restarts it.
	th.lastReq = unix.PTRACE_CONT
	if werr != nil {
		return true, false, werr
	}
	if !ws.Stopped() {
		b.deferred = append([]waitEvent{{th.tid, ws}}, b.deferred...)
		return true, false, nil
	}
	if err := th.loadRegs(); err != nil {
		b.deferred = append([]waitEvent{{th.tid, ws}}, b.deferred...)
		return true, false, nil
	}
	if !b.noTranslateBack {
		b.translateBack(th, r, entry, appScratch)
	}
	if int(ws)>>16 == eventStop && ws.StopSignal() == unix.SIGTRAP && !th.wantStop {
		return true, true, nil // an interrupt trap after the copy completed
	}
	if ws.StopSignal() == unix.SIGTRAP && int(ws)>>16 == 0 {
		if si, err := getSiginfo(th.tid); err == nil && si.Code != siKernel && !si.fromUser() {
			if dr6, _ := peekUser(th.tid, debugRegOffset+6*8); dr6&0xf != 0 {
				// A watchpoint fired on the displaced instruction: report it.
				pokeUser(th.tid, debugRegOffset+6*8, 0)
				th.flushRegs()
				b.onHardwareHit(th, dr6&0xf)
				return true, false, nil
			}
			return true, true, nil
		}
	}
	// Something else happened in the copy (a fault, a signal, an event): the
	// program sees it at the application's pc, handled in order.
	b.dstats.translatedStops++
	if !b.noTranslateBack {
		b.fixSiginfo(th, ws, slot, r)
	}
	th.flushRegs()
	b.deferred = append([]waitEvent{{th.tid, ws}}, b.deferred...)
	return true, false, nil
}

// writeSlot writes code into a slot unless it holds it already.
func (b *Backend) writeSlot(owner *process, slot uint64, code []byte) error {
	a := owner.scratch
	if prev, ok := a.written[slot]; ok && string(prev) == string(code) {
		return nil
	}
	owner.memMu.RLock()
	mem := owner.mem
	owner.memMu.RUnlock()
	if mem == nil {
		return unix.ESRCH
	}
	if _, err := mem.WriteAt(code, int64(slot)); err != nil {
		delete(a.written, slot)
		return err
	}
	a.written[slot] = append([]byte(nil), code...)
	return nil
}

// stepCopy single-steps th through the copy at its pc: once, or for a rep
// string instruction once per iteration until it leaves it.
func (b *Backend) stepCopy(th *thread, r *translate.Relocation) (unix.WaitStatus, error) {
	var ws unix.WaitStatus
	var err error
	for try := 0; try < 1<<30; try++ {
		if err = b.restart(th, unix.PTRACE_SINGLESTEP, 0); err != nil {
			return 0, err
		}
		if ws, err = b.waitFor(th.tid); err != nil {
			return 0, err
		}
		th.running = false
		th.invalidateRegs()
		if ws.Stopped() && int(ws)>>16 == eventStop && !th.wantStop {
			// A PTRACE_INTERRUPT left over from an earlier stop trapped before
			// or after the instruction: go on from where it is.
			th.interrupting = false
			if th.pc() == r.Dest {
				continue
			}
			return ws, nil
		}
		if ws.Stopped() && ws.StopSignal() == unix.SIGTRAP && int(ws)>>16 == 0 && th.pc() == r.Dest {
			// A rep iteration (the instruction stays at its address).
			if si, err := getSiginfo(th.tid); err == nil && si.Code == trapTrace {
				continue
			}
		}
		return ws, nil
	}
	return ws, err
}

// translateBack puts th's state back in application terms after its copy ran
// (or stopped in it): pc, scratch register, pushed return address.
func (b *Backend) translateBack(th *thread, r *translate.Relocation, entry translate.Entry, appScratch uint64) {
	raw := regsOf(th)
	inCopy := raw.RIP >= entry.Start && raw.RIP <= entry.End
	if inCopy {
		owner := th.proc.memOwner
		if t, ok, _ := owner.tt.Restore(raw, true, procMemory{b, th.proc}); ok {
			setRegsFrom(th, t)
		}
		return
	}
	// The copy branched away: only the registers it borrowed need fixing.
	if r.Scratch != translate.NoReg {
		th.setReg(encodingOffset[r.Scratch], appScratch)
	}
	if r.FixReturn {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.Next)
		writeWords(th.proc.pid, th.reg(offRSP), w[:])
	}
}

// fixSiginfo rewrites a fault's address when it is the copy's pc (SIGILL,
// SIGFPE, SIGTRAP and SIGSEGV from a general protection fault report the
// instruction's address), so the program's handler sees the application's.
func (b *Backend) fixSiginfo(th *thread, ws unix.WaitStatus, slot uint64, r *translate.Relocation) {
	if !ws.Stopped() || int(ws)>>16 != 0 {
		return
	}
	var raw [128]byte
	if err := ptrace(unix.PTRACE_GETSIGINFO, th.tid, 0, uintptr(unsafe.Pointer(&raw[0]))); err != nil {
		return
	}
	si := decodeSiginfo(raw[:])
	if si.fromUser() || si.Addr < slot || si.Addr > slot+uint64(len(r.Code)) {
		return
	}
	app, _, _ := r.AppPCAt(si.Addr)
	binary.LittleEndian.PutUint64(raw[16:], app)
	ptrace(unix.PTRACE_SETSIGINFO, th.tid, 0, uintptr(unsafe.Pointer(&raw[0])))
}

// translateStop gives a thread stopped inside generated code (any stop: none
// should be left there, but a stop is never reported at a pc sonde invented)
// the application's pc and registers.
func (b *Backend) translateStop(th *thread) {
	owner := th.proc.memOwner
	if owner.tt.Len() == 0 || b.noTranslateBack || th.loadRegs() != nil {
		return
	}
	if t, ok, err := owner.tt.Restore(regsOf(th), true, procMemory{b, th.proc}); ok && err == nil {
		setRegsFrom(th, t)
		th.flushRegs()
	}
}

// AddRestoreHook registers a library user's restore-state hook for a process
// (its address space): it runs for every stop sonde translates out of
// generated code there (translate.RestoreFunc), after sonde's own restoring.
func (b *Backend) AddRestoreHook(proc *target.Context, f translate.RestoreFunc) error {
	return b.do("add restore hook", func() error {
		p, err := b.procOf(proc, "add restore hook")
		if err != nil {
			return err
		}
		p.memOwner.tt.AddRestoreHook(f)
		return nil
	})
}
