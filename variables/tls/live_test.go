package tls_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
)

// TestLiveProcess attaches to a running tls_main (no gdb, no core) through
// a session and reads every thread's thread-local variables of every
// module, comparing values and addresses with what the threads printed:
// registers (the thread pointer) come from ptrace, memory from the live
// process.
func TestLiveProcess(t *testing.T) {
	p := build(t, "O2-dwarf5", []string{"-O2", "-gdwarf-5"})
	reportPath := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(p.exe, append(p.args(reportPath), "wait")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Four report lines: every thread has set its values and is waiting.
	deadline := time.Now().Add(10 * time.Second)
	for lines(reportPath) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the program reported %d threads", lines(reportPath))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the main thread reaches pause()
	printed := readReport(t, reportPath)

	tg, err := ptrace.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	proc, err := tg.Attach(cmd.Process.Pid, target.AttachOptions{Stop: true})
	if err != nil {
		t.Fatal(err)
	}
	sess := session.New(tg, session.Options{})
	threads := proc.Children()
	if len(threads) != 4 {
		t.Fatalf("%d threads", len(threads))
	}
	compared := 0
	libcDWARF := hasLibcDWARF(sess, proc)
	for _, th := range threads {
		self := printed[th.TID()]
		if !libcDWARF {
			delete(self, "errno") // errno is described by libc's debug information only
			compared += 2
		}
		if self == nil {
			t.Fatalf("thread %d printed nothing", th.TID())
		}
		e, _ := env(t, sess, th)
		for name, va := range self {
			for _, src := range []string{name, "&" + name} {
				v, err := expr.Eval(src, e)
				if err != nil {
					t.Errorf("thread %d: %s: %v", th.TID(), src, err)
					continue
				}
				var got string
				switch {
				case strings.HasPrefix(src, "&"):
					n, _ := v.Int()
					got = fmt.Sprintf("%#x", n)
				case v.Type.IsFloat():
					x, _ := v.Float()
					got = fmt.Sprint(x)
				default:
					n, _ := v.Int()
					got = fmt.Sprint(n)
				}
				want := va[0]
				if strings.HasPrefix(src, "&") {
					want = va[1]
				}
				if got != want {
					t.Errorf("thread %d: %s = %s, the thread printed %s", th.TID(), src, got, want)
				}
				compared++
			}
		}
	}
	if compared != 56 {
		t.Errorf("%d values compared, want 56", compared)
	}
}

func lines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}

// hasLibcDWARF reports whether the process's libc has debug information
// (libc6-dbg), without which errno has no description.
func hasLibcDWARF(sess *session.Session, proc *target.Context) bool {
	mods, err := sess.Modules(proc)
	if err != nil {
		return false
	}
	for _, m := range mods {
		if strings.Contains(filepath.Base(m.Path), "libc.so") {
			b, _ := sess.Binary(m)
			return b != nil && b.HasDWARF()
		}
	}
	return false
}

// TestDlmopenNamespace: a library loaded with dlmopen into a new link-map
// namespace is found through r_debug_extended's chain; every thread's
// block of it (dynamic TLS) is where the thread says.
func TestDlmopenNamespace(t *testing.T) {
	flags := []string{"-O0", "-gdwarf-5"}
	dl := testprog.Build(t, testprog.Spec{Sources: []string{"tls_dl.c"}, Flags: append([]string{"-shared", "-fPIC"}, flags...), Name: "tls_dl.so"})
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"tls_ns.c"}, Flags: append(flags, "-ldl")})
	reportPath := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(exe, dl, reportPath, "wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for lines(reportPath) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the program reported %d threads", lines(reportPath))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	printed := readReport(t, reportPath)
	tg, err := ptrace.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	proc, err := tg.Attach(cmd.Process.Pid, target.AttachOptions{Stop: true})
	if err != nil {
		t.Fatal(err)
	}
	sess := session.New(tg, session.Options{})
	compared := 0
	for _, th := range proc.Children() {
		e, _ := env(t, sess, th)
		want := printed[th.TID()]["dl_tls"]
		addr, err := expr.Eval("&dl_tls", e)
		if err != nil {
			t.Errorf("thread %d: &dl_tls: %v", th.TID(), err)
			continue
		}
		if a, _ := addr.Int(); fmt.Sprintf("%#x", a) != want[1] {
			t.Errorf("thread %d: &dl_tls = %#x, the thread printed %s", th.TID(), a, want[1])
		}
		if v, err := expr.Eval("dl_tls", e); err != nil {
			t.Errorf("thread %d: dl_tls: %v", th.TID(), err)
		} else if n, _ := v.Int(); fmt.Sprint(n) != want[0] {
			t.Errorf("thread %d: dl_tls = %d, the thread printed %s", th.TID(), n, want[0])
		}
		compared++
	}
	if compared != 2 {
		t.Fatalf("%d threads compared", compared)
	}
}
