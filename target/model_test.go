package target

import (
	"errors"
	"sync"
	"testing"

	"github.com/sondedbg/sonde/arch"
)

// nullBackend supports nothing; the model's own bookkeeping is what is tested
// here. Backends are tested against real processes in their own packages.
type nullBackend struct{}

func (nullBackend) Arch() *arch.Arch { return arch.AMD64 }
func (nullBackend) Launch(LaunchOptions) (*Context, *ProcessIO, error) {
	return nil, nil, ErrUnsupported
}
func (nullBackend) Attach(int, AttachOptions) (*Context, error)       { return nil, ErrUnsupported }
func (nullBackend) Detach(*Context) error                             { return ErrUnsupported }
func (nullBackend) Terminate(*Context) error                          { return ErrUnsupported }
func (nullBackend) Signal(*Context, Signal) error                     { return ErrUnsupported }
func (nullBackend) ReadMemory(*Context, uint64, []byte) (int, error)  { return 0, ErrUnsupported }
func (nullBackend) WriteMemory(*Context, uint64, []byte) (int, error) { return 0, ErrUnsupported }
func (nullBackend) MemoryMap(*Context) ([]MemoryRegion, error)        { return nil, nil }
func (nullBackend) Registers(*Context) (*Registers, error)            { return nil, ErrUnsupported }
func (nullBackend) SetRegisters(*Context, *Registers) error           { return ErrUnsupported }
func (nullBackend) Suspend(*Context) error                            { return ErrUnsupported }
func (nullBackend) Resume(*Context, ResumeMode, ResumeOptions) error  { return ErrUnsupported }
func (nullBackend) CanResume(*Context) ResumeModes                    { return 1 }
func (nullBackend) InsertBreakpoint(*Breakpoint) error                { return nil }
func (nullBackend) RemoveBreakpoint(*Breakpoint) error                { return nil }
func (nullBackend) Close() error                                      { return nil }

func TestLifecycleEventsAndReferences(t *testing.T) {
	tg := New(nullBackend{})
	var mu sync.Mutex
	var got []string
	tg.AddListener(func(e Event) {
		mu.Lock()
		got = append(got, e.Kind.String()+" "+string(e.Context.ID()))
		mu.Unlock()
	})
	p := tg.AddProcess(10, nil, "prog")
	th := tg.AddThread(p, 11, nil, "worker")
	if c, err := tg.Lookup("P10.11"); err != nil || c != th {
		t.Fatalf("lookup: %v %v", c, err)
	}
	th.Hold()
	tg.Stopped(th, &SuspendReason{Kind: ReasonUser}, 0x1000)
	if s, r, pc := th.State(); s != StateStopped || r.Kind != ReasonUser || pc != 0x1000 {
		t.Fatalf("state %v %v %x", s, r, pc)
	}
	tg.Exited(p, ExitStatus{Code: 3})
	if _, err := tg.Lookup("P10.11"); !errors.Is(err, ErrInvalidContext) {
		t.Fatalf("exited thread still found: %v", err)
	}
	// Held thread: still valid, operations say it exited, no Disposed yet.
	if _, err := th.Registers(); !errors.Is(err, ErrAlreadyExited) {
		t.Fatalf("registers of exited thread: %v", err)
	}
	th.Release()
	tg.Close()
	want := []string{"created P10", "created P10.11", "stopped P10.11", "exited P10.11",
		"exited P10", "disposed P10.11", "disposed P10"}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if e := p.Exit(); e == nil || e.TCFCode() != 3 {
		t.Fatalf("exit %v", e)
	}
}

func TestExtensionIsPerContext(t *testing.T) {
	type counter struct{ n int }
	ext := NewExtension[counter]()
	tg := New(nullBackend{})
	defer tg.Close()
	a := tg.AddProcess(1, nil, "a")
	b := tg.AddProcess(2, nil, "b")
	ext.Get(a).n = 5
	if ext.Get(a).n != 5 || ext.Get(b).n != 0 {
		t.Fatal("extension values leak between contexts")
	}
	other := NewExtension[string]()
	*other.Get(a) = "x"
	if ext.Get(a).n != 5 {
		t.Fatal("a second extension clobbered the first")
	}
}

func TestIDsAndSignals(t *testing.T) {
	for _, c := range []struct {
		id       ID
		pid, tid int
		bad      bool
	}{{"P12", 12, 0, false}, {"P12.13", 12, 13, false}, {"P", 0, 0, true}, {"X1", 0, 0, true}, {"P1.x", 0, 0, true}, {"P-1", 0, 0, true}} {
		pid, tid, err := ParseID(c.id)
		if (err != nil) != c.bad || pid != c.pid || tid != c.tid {
			t.Errorf("ParseID(%q) = %d %d %v", c.id, pid, tid, err)
		}
	}
	if !DefaultDontStop.Has(17) || DefaultDontStop.Has(11) {
		t.Errorf("default don't-stop set wrong: %x", DefaultDontStop)
	}
	if Signal(11).Name() != "SIGSEGV" || Signal(40).Name() != "SIGRT6" {
		t.Errorf("signal names: %s %s", Signal(11).Name(), Signal(40).Name())
	}
	if (ExitStatus{Signal: 9}).TCFCode() != -9 {
		t.Error("killed exit code")
	}
	err := Errorf(CodeAlreadyRunning, "resume", "P1.1", nil)
	if !errors.Is(err, ErrAlreadyRunning) || errors.Is(err, ErrAlreadyStopped) || CodeOf(err) != CodeAlreadyRunning {
		t.Error("error codes do not match by errors.Is")
	}
}

func TestWatchpointValidation(t *testing.T) {
	tg := New(nullBackend{})
	defer tg.Close()
	p := tg.AddProcess(1, nil, "a")
	if _, err := tg.SetBreakpoint(p, BreakpointSpec{Kind: Watchpoint, Addr: 0x1001, Size: 4}); CodeOf(err) != CodeInvalidAddress {
		t.Errorf("misaligned watchpoint: %v", err)
	}
	if _, err := tg.SetBreakpoint(p, BreakpointSpec{Kind: Watchpoint, Addr: 0x1000, Size: 3}); CodeOf(err) != CodeInvalidDataSize {
		t.Errorf("bad size: %v", err)
	}
	bp, err := tg.SetBreakpoint(p, BreakpointSpec{Addr: 0x1000})
	if err != nil || len(tg.BreakpointsAt(p, 0x1000)) != 1 {
		t.Fatalf("set: %v", err)
	}
	if err := tg.RemoveBreakpoint(bp); err != nil || len(tg.Breakpoints(p)) != 0 {
		t.Fatalf("remove: %v", err)
	}
	if err := tg.RemoveBreakpoint(bp); err == nil {
		t.Fatal("second remove succeeded")
	}
}
