package probes

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Entry is one range of a trampoline's translation table: a thread whose PC
// is in [Lo, Hi) is, for the application, at AppPC.
type Entry struct {
	Lo, Hi uint64
	AppPC  uint64
	// AppRegs: the general registers equal the application's, except the
	// stack pointer (the application's is RSP+SPAdjust) and, when FlagsAt >= 0,
	// the flags (the application's are the word at RSP+FlagsAt).
	AppRegs  bool
	SPAdjust int64
	FlagsAt  int64
	// Payload marks code of sonde's own (save, payload, restore): a stop there
	// is reported at AppPC, which has not run yet.
	Payload bool
	// Spills, where AppRegs is false, says where the application's registers
	// are: register name ("rax", "rflags") to offset from RSP.
	Spills map[string]int64
}

// Table is the translation table of one trampoline: from cache addresses to
// application PCs and where the application's registers are.
type Table struct {
	Lo, Hi  uint64 // the trampoline's bytes
	Site    uint64 // the patched application address
	SiteEnd uint64 // first application byte after the patched range
	Entries []Entry
}

// Lookup returns the entry for a cache PC.
func (t *Table) Lookup(pc uint64) (Entry, bool) {
	i := sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].Hi > pc })
	if i < len(t.Entries) && t.Entries[i].Lo <= pc {
		return t.Entries[i], true
	}
	return Entry{}, false
}

// redZone is the part of the stack below RSP that a leaf function may use
// without moving RSP (System V ABI): the trampoline skips it before pushing.
const redZone = 128

// emitter appends code at a known address and records table entries.
type emitter struct {
	base  uint64
	code  []byte
	table Table
}

func (e *emitter) pc() uint64 { return e.base + uint64(len(e.code)) }

// add appends one instruction with its table entry.
func (e *emitter) add(b []byte, en Entry) {
	en.Lo, en.Hi = e.pc(), e.pc()+uint64(len(b))
	e.code = append(e.code, b...)
	e.table.Entries = append(e.table.Entries, en)
}

// Payload instructions (encodings).
var (
	leaSkipRedZone = []byte{0x48, 0x8d, 0x64, 0x24, 0x80}                   // lea -0x80(%rsp),%rsp
	leaBackRedZone = []byte{0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00} // lea 0x80(%rsp),%rsp
	pushfq         = []byte{0x9c}
	popfq          = []byte{0x9d}
)

// lockIncRIP returns `lock incq disp(%rip)` placed at pc, incrementing the
// 64-bit word at counter.
func lockIncRIP(pc, counter uint64) ([]byte, error) {
	b := []byte{0xf0, 0x48, 0xff, 0x05, 0, 0, 0, 0}
	disp := int64(counter) - int64(pc+uint64(len(b)))
	if disp != int64(int32(disp)) {
		return nil, fmt.Errorf("counter %#x out of rel32 reach of %#x", counter, pc)
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(int32(disp)))
	return b, nil
}

// jmpRel32 returns a jmp rel32 placed at pc to to.
func jmpRel32(pc, to uint64) ([]byte, error) {
	disp := int64(to) - int64(pc+JumpLen)
	if disp != int64(int32(disp)) {
		return nil, fmt.Errorf("jump from %#x to %#x out of rel32 reach", pc, to)
	}
	b := []byte{0xe9, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], uint32(int32(disp)))
	return b, nil
}

// countPayload appends the counting payload: the flags are saved (below the
// red zone) around a lock-free increment of the counter, no register else is
// touched.
func (e *emitter) countPayload(app, counter uint64) error {
	e.add(leaSkipRedZone, Entry{AppPC: app, AppRegs: true, FlagsAt: -1, Payload: true})
	e.add(pushfq, Entry{AppPC: app, AppRegs: true, SPAdjust: redZone, FlagsAt: -1, Payload: true})
	inc, err := lockIncRIP(e.pc(), counter)
	if err != nil {
		return err
	}
	e.add(inc, Entry{AppPC: app, AppRegs: true, SPAdjust: redZone + 8, FlagsAt: -1, Payload: true})
	e.add(popfq, Entry{AppPC: app, AppRegs: true, SPAdjust: redZone + 8, FlagsAt: 0, Payload: true})
	e.add(leaBackRedZone, Entry{AppPC: app, AppRegs: true, SPAdjust: redZone, FlagsAt: -1, Payload: true})
	return nil
}

// hook is a payload to run before an application instruction.
type hook func(e *emitter, app uint64) error

// buildRange generates the trampoline for a patched range at address at:
// each instruction, relocated, preceded by its hook's payload if it has one;
// then the jump back to the end of the range (unless the last instruction
// never falls through).
func buildRange(site Site, at uint64, hooks map[uint64]hook) ([]byte, *Table, error) {
	e := &emitter{base: at}
	leaves := false
	for _, in := range site.Insns {
		if h := hooks[in.Address]; h != nil {
			if err := h(e, in.Address); err != nil {
				return nil, nil, err
			}
		}
		r, err := relocateInsn(in, e.pc())
		if err != nil {
			return nil, nil, err
		}
		start := e.pc()
		e.code = append(e.code, r.code...)
		for _, en := range r.entries {
			en.Lo, en.Hi = start+en.Lo, start+en.Hi
			e.table.Entries = append(e.table.Entries, en)
		}
		leaves = r.leaves
	}
	if !leaves {
		back := site.Addr + uint64(site.Len)
		j, err := jmpRel32(e.pc(), back)
		if err != nil {
			return nil, nil, err
		}
		e.add(j, Entry{AppPC: back, AppRegs: true, FlagsAt: -1})
	}
	return e.finish(site), &e.table, nil
}

// buildCount generates a counting trampoline for site at address at, with its
// counter at counter.
func buildCount(site Site, at, counter uint64) ([]byte, *Table, error) {
	return buildRange(site, at, map[uint64]hook{site.Addr: func(e *emitter, app uint64) error {
		return e.countPayload(app, counter)
	}})
}

func (e *emitter) finish(site Site) []byte {
	e.table.Lo, e.table.Hi = e.base, e.pc()
	e.table.Site, e.table.SiteEnd = site.Addr, site.Addr+uint64(site.Len)
	return e.code
}

// sitePatch returns the bytes written at the site: the jump to the
// trampoline, then int3 over the rest of the covered range (never executed:
// no branch leads there).
func sitePatch(site Site, tramp uint64) ([]byte, error) {
	j, err := jmpRel32(site.Addr, tramp)
	if err != nil {
		return nil, err
	}
	for len(j) < site.Len {
		j = append(j, 0xcc)
	}
	return j, nil
}
