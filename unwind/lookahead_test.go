package unwind

import (
	"fmt"
	"testing"
)

// Code of an interpreter, as HotSpot's template interpreter lays it out: a
// return entry that a jump, not a call, precedes (the interpreter pushes
// the address and jumps to its callee), and a call stub whose return
// address follows a call.
var interpCode = []byte{
	0x55, 0x48, 0x89, 0xe5, // +0: push %rbp; mov %rsp,%rbp
	0x41, 0xff, 0xe2, // +4: jmp *%r10 (the previous template's dispatch)
	0x48, 0x8b, 0x65, 0xf0, // +7: the return entry: mov -0x10(%rbp),%rsp
	0xff, 0xd6, // +11: call *%rsi (the call stub)
	0xc9, 0xc3, // +13: leave; ret
	0x0f, 0x05, // +15: syscall
	0xc9, 0xc3,
}

const (
	interpReturn = jitCode + 7  // pushed by hand: no call before it
	stubReturn   = jitCode + 13 // after call *%rsi
	interpPC     = jitCode + 17 // frame 0, after the syscall
)

// interpWorld builds a stack of n interpreted frames, 0x40 bytes each, the
// innermost at jitStack, over one call-stub frame whose frame pointer chain
// ends (zero): frame k's rbp is jitStack+0x40k+0x10, its saved return
// address interpReturn (stubReturn for the last interpreted frame, whose
// caller is the stub).
func interpWorld(n int) *jitWorld {
	w := &jitWorld{code: region{jitCode, interpCode}, stack: region{jitStack, make([]byte, 0x40*(n+2))}, checker: true}
	for k := 0; k < n; k++ {
		bp := uint64(jitStack + 0x40*k + 0x10)
		w.put(bp, bp+0x40)
		ra := uint64(interpReturn)
		if k == n-1 {
			ra = stubReturn
		}
		w.put(bp+8, ra)
	}
	return w
}

// TestLookaheadInterpreterFrames: return addresses no call pushed, in code
// the client vouches for, are taken when the frame-pointer chain above them
// reaches one after a call — and marked as such — however deep the
// interpreted recursion, up to maxLookahead+1 frames.
func TestLookaheadInterpreterFrames(t *testing.T) {
	for _, n := range []int{1, 2, 5, maxLookahead + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := interpWorld(n)
			frames, stop := w.walk(interpPC, jitStack, jitStack+0x10)
			if stop != StopOutermost || len(frames) != n+1 {
				t.Fatalf("stop %v, %d frames; want %d frames to the zero frame pointer", stop, len(frames), n+1)
			}
			for k, f := range frames {
				wantPC, wantMethod := uint64(interpReturn), MethodLookahead
				switch k {
				case 0:
					wantPC = interpPC
				case n:
					wantPC = stubReturn
				}
				if k >= n-1 {
					// The last interpreted frame's caller follows a call;
					// the stub's chain ends.
					wantMethod = MethodFramePointer
				}
				if f.PC != wantPC || f.Method != wantMethod {
					t.Errorf("frame %d: pc %#x method %v, want %#x %v", k, f.PC, f.Method, wantPC, wantMethod)
				}
			}
		})
	}
}

// TestLookaheadRefuses: the look-ahead takes nothing the chain does not
// vouch for: a chain that stops going up the stack, that meets a word that
// is no code, that ends at the zero frame pointer or goes on longer than
// maxLookahead without reaching a return address after a call, or code the
// client does not vouch for. The walk then ends at frame 0.
func TestLookaheadRefuses(t *testing.T) {
	cases := []struct {
		name   string
		n      int
		break_ func(w *jitWorld)
	}{
		{"descending", 3, func(w *jitWorld) { w.put(jitStack+0x50, jitStack+0x10) }},
		{"same", 3, func(w *jitWorld) { w.put(jitStack+0x50, jitStack+0x50) }},
		{"misaligned", 3, func(w *jitWorld) { w.put(jitStack+0x50, jitStack+0x94) }},
		{"too far", 3, func(w *jitWorld) { w.put(jitStack+0x50, jitStack+0x50+maxFrameSize+0x40) }},
		{"not code", 3, func(w *jitWorld) { w.put(jitStack+0x58, 0x300000000) }},
		{"unreadable", 3, func(w *jitWorld) { w.put(jitStack+0x50, jitStack+0x10000) }},
		{"outermost", 3, func(w *jitWorld) { w.put(jitStack+0x90, 0); w.put(jitStack+0x98, 0) }},
		{"after a call in no code", 3, func(w *jitWorld) { w.put(jitStack+0x98, 0x300000000) }},
		{"beyond maxLookahead", maxLookahead + 2, nil},
		{"no CodeChecker", 3, func(w *jitWorld) { w.checker = false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := interpWorld(c.n)
			if c.break_ != nil {
				c.break_(w)
			}
			frames, stop := w.walk(interpPC, jitStack, jitStack+0x10)
			if len(frames) != 1 || stop != StopNoUnwindInfo {
				t.Errorf("stop %v, frames %+v; want no-unwind-info after frame 0", stop, frames)
			}
		})
	}
}

// TestLookaheadRemembers: a walk through a deep interpreted recursion reads
// each frame of the chain a bounded number of times (the look-ahead from
// the innermost frame vouches for those above it), not once per frame below.
func TestLookaheadRemembers(t *testing.T) {
	w := interpWorld(maxLookahead)
	c := &countingReader{w: w}
	u := New(c, w, nil)
	var regs Registers
	regs.Set(regRIP, interpPC)
	regs.Set(regRSP, jitStack)
	regs.Set(regRBP, jitStack+0x10)
	u.InitRegisters(&regs)
	frames, _ := u.Walk(nil)
	if len(frames) != maxLookahead+1 {
		t.Fatalf("%d frames, want %d", len(frames), maxLookahead+1)
	}
	// Blocks of 512 bytes hold 8 frames; four are cached. A walk that
	// looked ahead from every frame would read the stack ~maxLookahead/2
	// times over.
	if limit := 4 * len(w.stack.data) / blockSize; c.stackReads > limit+8 {
		t.Errorf("%d reads of the stack for %d frames, want at most %d", c.stackReads, len(frames), limit+8)
	}
}

// countingReader counts reads of jitWorld's stack.
type countingReader struct {
	w          *jitWorld
	stackReads int
}

func (c *countingReader) ReadMemory(buf []byte, addr uint64) (int, error) {
	if addr-c.w.stack.addr < uint64(len(c.w.stack.data)) {
		c.stackReads++
	}
	return c.w.ReadMemory(buf, addr)
}

func (c *countingReader) ReadRegister(int) (uint64, bool) { return 0, false }

// BenchmarkLookahead walks 64 interpreted frames (return addresses no call
// pushed, vouched for by one look-ahead) against the same chain where every
// return address follows a call (the frame-pointer rule alone).
func BenchmarkLookahead(b *testing.B) {
	for _, c := range []struct {
		name string
		ra   uint64
	}{{"lookahead", interpReturn}, {"after-call", stubReturn}} {
		b.Run(c.name, func(b *testing.B) {
			const n = 64
			w := interpWorld(n)
			for k := 0; k < n-1; k++ {
				w.put(jitStack+0x40*uint64(k)+0x18, c.ra)
			}
			u := New(w, w, nil)
			var regs Registers
			regs.Set(regRIP, interpPC)
			regs.Set(regRSP, jitStack)
			regs.Set(regRBP, jitStack+0x10)
			frames := make([]Frame, 0, n+1)
			total := 0
			b.ReportAllocs()
			for b.Loop() {
				u.InitRegisters(&regs)
				frames, _ = u.Walk(frames[:0])
				total += len(frames)
			}
			if len(frames) != n+1 {
				b.Fatalf("%d frames", len(frames))
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}
