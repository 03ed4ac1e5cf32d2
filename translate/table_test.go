package translate

import (
	"encoding/binary"
	"errors"
	"testing"
)

// fakeMem is a little target memory for spill slots.
type fakeMem map[uint64]byte

func (m fakeMem) ReadMemory(addr uint64, buf []byte) (int, error) {
	for i := range buf {
		v, ok := m[addr+uint64(i)]
		if !ok {
			return i, errors.New("unmapped")
		}
		buf[i] = v
	}
	return len(buf), nil
}

func (m fakeMem) WriteMemory(addr uint64, data []byte) (int, error) {
	for i, b := range data {
		m[addr+uint64(i)] = b
	}
	return len(data), nil
}

func TestTableDisplacedEntry(t *testing.T) {
	// mov rdx,[rip+x] displaced far away: scratch register, value in agent.
	r, err := Relocate([]byte{0x48, 0x8b, 0x15, 0x61, 0x2c, 0, 0}, app, far, Displaced)
	if err != nil || r.Scratch == NoReg {
		t.Fatal(r, err)
	}
	var tt Table
	if err := tt.Add(r.Entry(0x1234, "displaced step")); err != nil {
		t.Fatal(err)
	}
	if err := tt.Add(Entry{Start: far + 2, End: far + 20}); !errors.Is(err, ErrOverlap) {
		t.Fatalf("overlap accepted: %v", err)
	}
	var raw Regs
	raw.RIP = far // faulted before completing
	raw.GPR[r.Scratch] = r.ScratchValue
	raw.GPR[4] = 0x7ffd0000
	got, ok, err := tt.Restore(raw, true, nil)
	if err != nil || !ok || got.RIP != app || got.GPR[r.Scratch] != 0x1234 || got.GPR[4] != raw.GPR[4] {
		t.Fatalf("in the copy: %+v %v %v", got, ok, err)
	}
	raw.RIP = far + uint64(len(r.Code)) // completed
	if got, _, _ := tt.Restore(raw, true, nil); got.RIP != r.Next || got.GPR[r.Scratch] != 0x1234 {
		t.Fatalf("after the copy: %+v", got)
	}
	raw.RIP = app + 100 // not generated code: unchanged
	if got, ok, err := tt.Restore(raw, true, nil); ok || err != nil || got != raw {
		t.Fatalf("application pc translated: %+v %v %v", got, ok, err)
	}
	tt.Remove(far)
	if tt.Len() != 0 {
		t.Fatal("entry not removed")
	}
}

func TestTableSpillsHooksAndStale(t *testing.T) {
	var tt Table
	const tramp = 0x7f0000001000
	// A trampoline whose payload saved rax at [rsp+8] and moved rsp by 16.
	if err := tt.Add(Entry{Start: tramp, End: tramp + 32, AppPC: app, RegsEqual: true, SPAdjust: 16,
		Spills: []Spill{{Reg: 0, StackOff: 8}}, Owner: "probe"}); err != nil {
		t.Fatal(err)
	}
	if err := tt.Add(Entry{Start: tramp + 32, End: tramp + 64, AppPC: app, Owner: "payload"}); err != nil {
		t.Fatal(err)
	}
	mem := fakeMem{}
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], 0xabcdef)
	mem.WriteMemory(0x1000+8, w[:])
	var raw Regs
	raw.RIP, raw.GPR[4], raw.GPR[0] = tramp+5, 0x1000, 99
	var seen []bool
	tt.AddRestoreHook(func(ctx *RestoreContext, raw, tr *Regs, restoreMemory bool) error {
		seen = append(seen, restoreMemory)
		if ctx.Entry.Owner == "probe" {
			tr.GPR[3] = 7 // the hook's own clobbered register
		}
		if !restoreMemory && raw.GPR[1] == 1 {
			return ErrRefuse
		}
		return nil
	})
	got, ok, err := tt.Restore(raw, false, mem)
	if err != nil || !ok || got.RIP != app || got.GPR[0] != 0xabcdef || got.GPR[4] != 0x1010 || got.GPR[3] != 7 {
		t.Fatalf("%+v %v %v", got, ok, err)
	}
	raw.GPR[1] = 1
	if _, _, err := tt.Restore(raw, false, mem); !errors.Is(err, ErrUntranslatable) || !errors.Is(err, ErrRefuse) {
		t.Fatalf("refusal: %v", err)
	}
	if _, _, err := tt.Restore(raw, true, mem); err != nil {
		t.Fatalf("a hook may refuse only when asked: %v", err)
	}
	if len(seen) != 3 || seen[0] || !seen[2] {
		t.Fatalf("hook calls %v", seen)
	}
	raw.GPR[1] = 0
	// Inside payload code: the pc only.
	raw.RIP = tramp + 40
	if got, ok, err := tt.Restore(raw, false, mem); !ok || got.RIP != app || !errors.Is(err, ErrUntranslatable) {
		t.Fatalf("payload: %+v %v %v", got, ok, err)
	}
	// Unreadable spill slot.
	raw.RIP, raw.GPR[4] = tramp+5, 0x9000
	if _, _, err := tt.Restore(raw, false, mem); !errors.Is(err, ErrUntranslatable) {
		t.Fatalf("unreadable spill: %v", err)
	}
	// Stale code: untranslatable.
	tt.MarkStale(app, app+1)
	raw.GPR[4] = 0x1000
	if _, ok, err := tt.Restore(raw, true, mem); !ok || !errors.Is(err, ErrUntranslatable) {
		t.Fatalf("stale: %v %v", ok, err)
	}
}
