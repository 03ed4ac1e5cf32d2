package unwind

import (
	"encoding/binary"
	"testing"
)

// jitWorld is code in no module (an anonymous executable region, as a JIT
// compiler writes) and a stack, behind a client that vouches for the code
// region through CodeChecker when checker is set.
type jitWorld struct {
	code, stack region
	checker     bool
}

func (w *jitWorld) ReadMemory(buf []byte, addr uint64) (int, error) {
	for _, r := range []region{w.code, w.stack} {
		if addr >= r.addr && addr-r.addr < uint64(len(r.data)) {
			return copy(buf, r.data[addr-r.addr:]), nil
		}
	}
	return 0, nil
}

func (w *jitWorld) ReadRegister(int) (uint64, bool)              { return 0, false }
func (w *jitWorld) LookupModule(uint64) (*Module, error)         { return nil, nil }
func (w *jitWorld) SymbolInfo(*Module, uint64) ([]Symbol, error) { return nil, nil }
func (w *jitWorld) IsCode(addr uint64) bool {
	return w.checker && addr-w.code.addr < uint64(len(w.code.data))
}
func (w *jitWorld) put(addr, v uint64) {
	binary.LittleEndian.PutUint64(w.stack.data[addr-w.stack.addr:], v)
}
func (w *jitWorld) walk(rip, rsp, rbp uint64) ([]Frame, StopReason) {
	return w.walkWith(w, rip, rsp, rbp)
}

func (w *jitWorld) walkWith(lookup LookupIP, rip, rsp, rbp uint64) ([]Frame, StopReason) {
	u := New(w, lookup, nil)
	var regs Registers
	regs.Set(regRIP, rip)
	regs.Set(regRSP, rsp)
	regs.Set(regRBP, rbp)
	u.InitRegisters(&regs)
	return u.Walk(nil)
}

// noChecker hides jitWorld's CodeChecker.
type noChecker struct{ w *jitWorld }

func (n noChecker) LookupModule(pc uint64) (*Module, error) { return nil, nil }
func (n noChecker) SymbolInfo(*Module, uint64) ([]Symbol, error) {
	return nil, nil
}

const (
	jitCode  = 0x7f0000100000
	jitStack = 0x7ffd00000000
)

func newJITWorld() *jitWorld {
	code := []byte{
		0x55, 0x48, 0x89, 0xe5, // push %rbp; mov %rsp,%rbp
		0xff, 0xd6, // call *%rsi (returns to +6)
		0xc9, 0xc3, // leave; ret
		0x0f, 0x05, // syscall (frame 0 stops after it, at +10)
		0xc9, 0xc3,
	}
	w := &jitWorld{code: region{jitCode, code}, stack: region{jitStack, make([]byte, 0x1000)}, checker: true}
	// Frame 0: [sp] holds a word that looks like an address; rbp chains
	// through two more JIT frames to a zero frame pointer.
	w.put(jitStack, 0x300000000)
	w.put(jitStack+0x10, jitStack+0x40)
	w.put(jitStack+0x18, jitCode+6)
	w.put(jitStack+0x40, jitStack+0x80)
	w.put(jitStack+0x48, jitCode+6)
	return w
}

// TestJITFramePointerChain: through code in no module the engine follows
// the frame-pointer chain when each return address follows a call in code
// the client vouches for, and never takes [sp] unchecked.
func TestJITFramePointerChain(t *testing.T) {
	w := newJITWorld()
	frames, stop := w.walk(jitCode+10, jitStack, jitStack+0x10)
	if stop != StopOutermost || len(frames) != 3 || frames[1].PC != jitCode+6 || frames[2].PC != jitCode+6 {
		t.Errorf("stop %v, frames %+v; want 3 frames to the zero frame pointer", stop, frames)
	}
	for _, f := range frames {
		if f.PC == 0x300000000 {
			t.Errorf("the word at [sp] became a frame")
		}
	}

	// Without a CodeChecker nothing vouches for the JIT code: one frame.
	frames, stop = w.walkWith(noChecker{w}, jitCode+10, jitStack, jitStack+0x10)
	if len(frames) != 1 || stop != StopNoUnwindInfo {
		t.Errorf("without CodeChecker: stop %v, %d frames; want no-unwind-info after frame 0", stop, len(frames))
	}

	// No frame pointer, and [sp] is no return address: the walk ends.
	frames, stop = w.walk(jitCode+10, jitStack, 0)
	if len(frames) != 1 || stop != StopNoUnwindInfo {
		t.Errorf("garbage [sp]: stop %v, %d frames; want no-unwind-info after frame 0", stop, len(frames))
	}

	// A return address that does not follow a call (the middle of the
	// push/mov) where the chain above vouches for nothing (lookahead.go),
	// or one that is not canonical, is refused.
	for _, ra := range []uint64{jitCode + 3, 0x01ffffffffffff78} {
		w := newJITWorld()
		w.put(jitStack+0x18, ra)
		w.put(jitStack+0x48, 0x300000000)
		frames, stop = w.walk(jitCode+10, jitStack, jitStack+0x10)
		if len(frames) != 1 {
			t.Errorf("return address %#x: stop %v, frames %+v; want the walk to end at frame 0", ra, stop, frames)
		}
	}

	// At the function's first instruction [sp] is the return address.
	w = newJITWorld()
	w.put(jitStack, jitCode+6)
	frames, _ = w.walk(jitCode, jitStack, jitStack+0x40)
	if len(frames) < 2 || frames[1].PC != jitCode+6 || frames[0].Method != MethodPrologue {
		t.Errorf("at the entry: frames %+v", frames)
	}
}

func TestCanonical(t *testing.T) {
	for addr, want := range map[uint64]bool{0: true, 0x7fffffffffff: true, 0x800000000000: false,
		0x01ffffffffffff78: false, 0xffff800000000000: true, 0xffffffffff600000: true, 0xfffe800000000000: false} {
		if canonical(addr) != want {
			t.Errorf("canonical(%#x) = %v", addr, !want)
		}
	}
}
