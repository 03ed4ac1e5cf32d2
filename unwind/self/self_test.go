package self

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/unwind"
)

var proc *Process

func process(t testing.TB) *Process {
	if proc == nil {
		p, err := New(nil)
		if err != nil {
			t.Fatal(err)
		}
		proc = p
	}
	return proc
}

// stackAt records, at one call site, our backtrace and runtime.Callers.
//
//go:noinline
func stackAt(t *testing.T, depth int, opts unwind.BacktraceOptions) (unwind.Trace, []uintptr) {
	if depth > 0 {
		tr, pcs := stackAt(t, depth-1, opts)
		runtime.KeepAlive(depth)
		return tr, pcs
	}
	tr, err := process(t).Backtrace(opts)
	if err != nil {
		t.Fatal(err)
	}
	pcs := make([]uintptr, 256)
	pcs = pcs[:runtime.Callers(1, pcs)]
	return tr, pcs
}

// TestGoStackMatchesRuntimeCallers unwinds the test's own goroutine through
// the Go linker's CFI and compares every return address with what the Go
// runtime's own unwinder reports for the same frames.
func TestGoStackMatchesRuntimeCallers(t *testing.T) {
	tr, pcs := stackAt(t, 5, unwind.BacktraceOptions{NoInline: true})
	// pcs[0] is stackAt(depth 0) after its Callers call; pcs[1:] are return
	// addresses that our walk must also have, in order, ending at the
	// goroutine's first frame.
	// The runtime hides wrapper functions (the go statement's gowrapN) and
	// ends with runtime.goexit, the fake return address at the top of every
	// goroutine stack, which has no CFI: we stop below it.
	want := pcs[1:]
	if len(want) > 0 && fn(uint64(want[len(want)-1])) == "runtime.goexit" {
		want = want[:len(want)-1]
	}
	var got []uint64
	start := -1
	for i, f := range tr.Frames {
		if start < 0 && f.PC == uint64(want[0]) {
			start = i
		}
		if start >= 0 && !strings.Contains(fn(f.PC-1), ".gowrap") {
			got = append(got, f.PC)
		}
	}
	if start < 0 {
		t.Fatalf("return address %#x (%s) not in our trace:\n%s", want[0], fn(uint64(want[0])), dump(tr))
	}
	n := min(len(got), len(want))
	for i := 0; i < n; i++ {
		if got[i] != uint64(want[i]) {
			t.Fatalf("frame %d: pc %#x (%s), runtime says %#x (%s)\n%s", start+i, got[i], fn(got[i]), want[i], fn(uint64(want[i])), dump(tr))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("walk stopped (%v, %v) with %d frames, the runtime has %d\n%s", tr.Stop, tr.Err, len(got), len(want), dump(tr))
	}
	// Below the first frame the runtime also reports: the capture inside
	// package self, Backtrace, and the innermost stackAt.
	var below []string
	for _, f := range tr.Frames[:start] {
		below = append(below, fn(f.LookupPC))
	}
	wantBelow := []string{"unwind/self.(*Process).capture", "unwind/self.(*Process).Backtrace", "unwind/self.stackAt"}
	if len(below) != len(wantBelow) {
		t.Fatalf("frames below the runtime's first: %q, want %q", below, wantBelow)
	}
	for i, w := range wantBelow {
		if !strings.HasSuffix(below[i], w) {
			t.Errorf("frame %d in %s, want %s", i, below[i], w)
		}
	}
}

func fn(pc uint64) string {
	if f := runtime.FuncForPC(uintptr(pc)); f != nil {
		return f.Name()
	}
	return ""
}

func dump(tr unwind.Trace) string {
	var b strings.Builder
	for _, f := range tr.Frames {
		fmt.Fprintf(&b, "#%d %#x %s\n", f.Index, f.PC, fn(f.LookupPC))
	}
	fmt.Fprintf(&b, "stop: %v %v\n", tr.Stop, tr.Err)
	return b.String()
}

// BenchmarkStackSelf: warm walks of the benchmark goroutine's own stack
// (capture, stack copy and walk; pcs only).
func BenchmarkStackSelf(b *testing.B) {
	p := process(b)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	n := 0
	for i := 0; i < b.N; i++ {
		tr, err := p.Backtrace(unwind.BacktraceOptions{NoSymbols: true})
		if err != nil {
			b.Fatal(err)
		}
		n += len(tr.Frames)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(n)/(threadCPU()-cpu0).Seconds(), "frames/cpu-s")
}

// threadCPU is the calling OS thread's CPU time: on the shared machines
// wall-clock rates swing with the load, CPU time much less.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCaptureThenWalk: registers and stack captured now, walked later (after
// the goroutine moved on), still describe the stack at the capture.
func TestCaptureThenWalk(t *testing.T) {
	p := process(t)
	buf := make([]byte, StackCopy)
	regs, stack, err := captureHere(p, buf)
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := regs.Get(7)
	// Overwrite the stack area we used by calling deeper functions.
	deepCalls(50)
	tr, err := p.Thread(&regs, stack, sp).Backtrace(unwind.BacktraceOptions{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range tr.Frames {
		names = append(names, fn(f.LookupPC))
	}
	joined := strings.Join(names, " ")
	// (Capture is inlined into captureHere: the runtime names that frame's
	// pc after the inlined function.)
	for _, want := range []string{"unwind/self.(*Process).Capture", "unwind/self.TestCaptureThenWalk", "testing.tRunner"} {
		if !strings.Contains(joined, want) {
			t.Errorf("walk lacks %s: %s", want, joined)
		}
	}
	if strings.Contains(joined, "deepCalls") {
		t.Errorf("walk shows calls made after the capture: %s", joined)
	}
}

//go:noinline
func captureHere(p *Process, buf []byte) (unwind.Registers, []byte, error) {
	return p.Capture(buf)
}

//go:noinline
func deepCalls(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return deepCalls(n-1) + int(pad[n%256])
}
