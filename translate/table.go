package translate

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Regs is the machine state translation works on: the x86-64 general
// registers by encoding number (Reg), rip and rflags.
type Regs struct {
	GPR    [16]uint64
	RIP    uint64
	RFLAGS uint64
}

// Spill says where a register's application value is while generated code
// runs in its place.
type Spill struct {
	Reg Reg
	// InAgent: the value is Value, kept by sonde (a displaced step's scratch
	// register). Otherwise it is the 8 bytes at the generated code's stack
	// pointer plus StackOff in the target's memory (a trampoline's save area).
	InAgent  bool
	Value    uint64
	StackOff int64
}

// Entry maps one range of generated code back to the application (DynamoRIO's
// translation_entry plus its spill tracking).
type Entry struct {
	Start, End uint64 // the generated code, [Start, End)
	// AppPC is the application pc every pc in [Start, End) stands for: the
	// instruction whose effect has not completed there.
	AppPC uint64
	// AppEnd, when non-zero, is the application pc End itself stands for (the
	// code fell through: the instruction completed).
	AppEnd uint64
	// RegsEqual: the registers there are the application's, but for Spills and
	// SPAdjust. False inside payload code: only the pc can be recovered.
	RegsEqual bool
	Spills    []Spill
	// SPAdjust is added to the generated code's rsp to get the application's.
	SPAdjust int64
	// FlagsSpilled: the application's rflags are the 8 bytes at the
	// generated code's rsp plus FlagsAt (a payload saved them there).
	FlagsSpilled bool
	FlagsAt      int64
	// Owner names who generated the code ("displaced step", a probe's name).
	Owner string
	// Stale: the application bytes this code stands for changed since it was
	// generated (JIT, hot patch): stops here are untranslatable.
	Stale bool
}

func (e *Entry) covers(pc uint64) bool {
	return pc >= e.Start && (pc < e.End || (pc == e.End && e.AppEnd != 0))
}

// Memory is what translation needs of the target: reads (spill slots) and, when
// restoring memory, writes.
type Memory interface {
	ReadMemory(addr uint64, buf []byte) (int, error)
	WriteMemory(addr uint64, data []byte) (int, error)
}

// RestoreContext is what a restore hook is told about the stop.
type RestoreContext struct {
	Entry Entry
	// AppCodeConsistent is false when the application's bytes under the code
	// may have changed since it was generated.
	AppCodeConsistent bool
	Mem               Memory
}

// RestoreFunc is a library user's restore-state hook (DynamoRIO's
// dr_register_restore_state_ex_event): called for every translation, with the
// raw machine state and the translation so far, it puts back what the user's
// own instrumentation clobbered in translated. It may change memory only when
// restoreMemory is true; when it is false sonde is only asking (a report, an
// unwind), and the hook may refuse with ErrRefuse.
type RestoreFunc func(ctx *RestoreContext, raw, translated *Regs, restoreMemory bool) error

// Errors of Restore.
var (
	// ErrRefuse is what a hook returns to refuse a translation it was only
	// asked for.
	ErrRefuse = errors.New("restore hook refused the translation")
	// ErrUntranslatable: the pc is in generated code whose application state
	// cannot be recovered (stale code, a hook's refusal, an unreadable spill).
	ErrUntranslatable = errors.New("state in generated code cannot be translated")
	// ErrOverlap: an entry would overlap one already in the table.
	ErrOverlap = errors.New("overlapping translation entries")
)

// Table holds the translation entries of one address space and the restore
// hooks. It is safe for concurrent use.
type Table struct {
	mu      sync.RWMutex
	entries []Entry // sorted by Start, disjoint
	hooks   []RestoreFunc
}

// Add adds an entry; entries may not overlap.
func (t *Table) Add(e Entry) error {
	if e.End <= e.Start {
		return fmt.Errorf("translation entry [%#x, %#x): %w", e.Start, e.End, ErrOverlap)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.entries), func(i int) bool { return t.entries[i].Start >= e.Start })
	if (i < len(t.entries) && t.entries[i].Start < e.End) || (i > 0 && t.entries[i-1].End > e.Start) {
		return fmt.Errorf("translation entry [%#x, %#x): %w", e.Start, e.End, ErrOverlap)
	}
	t.entries = append(t.entries, Entry{})
	copy(t.entries[i+1:], t.entries[i:])
	t.entries[i] = e
	return nil
}

// Remove removes the entry that starts at start, if any.
func (t *Table) Remove(start uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.entries), func(i int) bool { return t.entries[i].Start >= start })
	if i < len(t.entries) && t.entries[i].Start == start {
		t.entries = append(t.entries[:i], t.entries[i+1:]...)
	}
}

// MarkStale marks every entry standing for application code in [lo, hi) stale.
func (t *Table) MarkStale(lo, hi uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.entries {
		if e := &t.entries[i]; e.AppPC < hi && e.AppPC >= lo {
			e.Stale = true
		}
	}
}

// Len returns the number of entries.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.entries)
}

// Lookup returns the entry covering pc (End included when the entry says what
// it stands for); an entry starting at pc wins over one ending there.
func (t *Table) Lookup(pc uint64) (Entry, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i := sort.Search(len(t.entries), func(i int) bool { return t.entries[i].Start > pc })
	for _, k := range []int{i - 1, i - 2} {
		if k >= 0 && t.entries[k].covers(pc) {
			return t.entries[k], true
		}
	}
	return Entry{}, false
}

// AddRestoreHook registers a restore-state hook; hooks run in the order added.
func (t *Table) AddRestoreHook(f RestoreFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hooks = append(t.hooks, f)
}

// Restore translates raw machine state into the application's. ok is false
// (and translated equals raw) when raw.RIP is in no generated code. Spills in
// the target's memory are read through mem; restoreMemory is passed to the
// hooks (true only when the thread will resume from the translated state).
// Inside code whose registers are not the application's (Entry.RegsEqual
// false), the pc is translated and the error is ErrUntranslatable.
func (t *Table) Restore(raw Regs, restoreMemory bool, mem Memory) (translated Regs, ok bool, err error) {
	e, found := t.Lookup(raw.RIP)
	if !found {
		return raw, false, nil
	}
	t.mu.RLock()
	hooks := append([]RestoreFunc(nil), t.hooks...)
	t.mu.RUnlock()
	translated = raw
	if e.Stale {
		return raw, true, fmt.Errorf("pc %#x (%s, stale): %w", raw.RIP, e.Owner, ErrUntranslatable)
	}
	translated.RIP = e.AppPC
	if raw.RIP == e.End {
		translated.RIP = e.AppEnd
	}
	for _, s := range e.Spills {
		if s.Reg < 0 || s.Reg > 15 {
			continue
		}
		if s.InAgent {
			translated.GPR[s.Reg] = s.Value
			continue
		}
		var b [8]byte
		if mem == nil {
			return translated, true, fmt.Errorf("spill of %v: no memory: %w", s.Reg, ErrUntranslatable)
		}
		if n, err := mem.ReadMemory(raw.GPR[4]+uint64(s.StackOff), b[:]); n != 8 {
			return translated, true, fmt.Errorf("spill of %v: %v: %w", s.Reg, err, ErrUntranslatable)
		}
		translated.GPR[s.Reg] = le64u(b[:])
	}
	if e.FlagsSpilled {
		var b [8]byte
		if mem == nil {
			return translated, true, fmt.Errorf("spilled flags: no memory: %w", ErrUntranslatable)
		}
		if n, err := mem.ReadMemory(raw.GPR[4]+uint64(e.FlagsAt), b[:]); n != 8 {
			return translated, true, fmt.Errorf("spilled flags: %v: %w", err, ErrUntranslatable)
		}
		translated.RFLAGS = le64u(b[:])
	}
	translated.GPR[4] = raw.GPR[4] + uint64(e.SPAdjust)
	ctx := &RestoreContext{Entry: e, AppCodeConsistent: !e.Stale, Mem: mem}
	for _, h := range hooks {
		if err := h(ctx, &raw, &translated, restoreMemory); err != nil {
			if errors.Is(err, ErrRefuse) {
				err = fmt.Errorf("%w: %w", ErrUntranslatable, err)
			}
			return translated, true, err
		}
	}
	if !e.RegsEqual {
		return translated, true, fmt.Errorf("pc %#x is inside %s's own code: %w", raw.RIP, e.Owner, ErrUntranslatable)
	}
	return translated, true, nil
}

// Entry returns the translation entry of a displaced copy of r written at
// r.Dest: pcs in the copy stand for AppPC, its end for Next, and a scratch
// register's application value is appScratch.
func (r *Relocation) Entry(appScratch uint64, owner string) Entry {
	e := Entry{Start: r.Dest, End: r.Dest + uint64(len(r.Code)), AppPC: r.AppPC, AppEnd: r.Next, RegsEqual: true, Owner: owner}
	if r.Scratch != NoReg {
		e.Spills = []Spill{{Reg: r.Scratch, InAgent: true, Value: appScratch}}
	}
	return e
}

func le64u(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}
