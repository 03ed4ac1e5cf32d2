package session

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/tls"
)

// TestTLSWithoutGlibcDWARF locates every thread's thread-local variables
// of every module of a live tls_main as if glibc had no debug information:
// the link_map layout is found by content (tls.ScanLayout). Addresses are
// compared with what each thread printed about itself.
func TestTLSWithoutGlibcDWARF(t *testing.T) {
	layoutFromDWARF = func(*variables.Reader, uint64) (*tls.Layout, error) {
		return nil, fmt.Errorf("%w: pretending there is no DWARF", tls.ErrNoLayout)
	}
	t.Cleanup(func() { layoutFromDWARF = tls.LayoutFromDWARF })
	flags := []string{"-O0", "-gdwarf-5"}
	so := func(src, name string) string {
		return testprog.Build(t, testprog.Spec{Sources: []string{src}, Flags: append([]string{"-shared", "-fPIC"}, flags...), Name: name})
	}
	lib, dl, dlie := so("tls_lib.c", "libtls_lib.so"), so("tls_dl.c", "tls_dl.so"), so("tls_dlie.c", "tls_dlie.so")
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"tls_main.c"},
		Flags: append(append([]string(nil), flags...), "-Wl,--no-as-needed", lib, "-Wl,-rpath,"+filepath.Dir(lib), "-ldl"),
		Name:  "tls_main_O0-dwarf5"})
	report := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(exe, dl, dlie, report, "wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var printed map[int]map[string]string // tid -> variable -> address
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if printed = readAddresses(report); len(printed) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the program reported %d threads", len(printed))
		}
	}
	time.Sleep(50 * time.Millisecond)
	tg, err := ptrace.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	proc, err := tg.Attach(cmd.Process.Pid, target.AttachOptions{Stop: true})
	if err != nil {
		t.Fatal(err)
	}
	sess := New(tg, Options{})
	mods, err := sess.Modules(proc)
	if err != nil {
		t.Fatal(err)
	}
	global := func(name string) (*variables.Variable, *variables.Reader, uint64, error) {
		return sess.FindGlobal(mods, name)
	}
	names := []string{"main_tls", "main_tls_d", "lib_tls", "lib_hidden", "dl_tls", "ie_tls"}
	if v, _, _, err := global("errno"); err == nil && v != nil {
		names = append(names, "errno") // libc's debug information (libc6-dbg) is installed
	}
	compared, unallocated := 0, 0
	for _, th := range proc.Children() {
		st, err := sess.Stack(th, StackOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Frame 0 is in libc (a wait): every name is another module's or libc's.
		env := &expr.Env{Frame: st.Frame(0), Global: global}
		self := printed[th.TID()]
		for _, name := range names {
			v, err := expr.Eval("&"+name, env)
			want, ok := self[name]
			var n int64
			if err == nil {
				n, _ = v.Int()
			}
			switch {
			case !ok && (name == "dl_tls" || name == "ie_tls"):
				// Threads that never used the dlopen'd libraries printed
				// neither; tls_dl.so's block does not exist for them,
				// tls_dlie.so's (static TLS) does.
				if name == "dl_tls" && !errors.Is(err, tls.ErrNotAllocated) {
					t.Errorf("thread %d: %s: %v, want not allocated", th.TID(), name, err)
				}
				if name == "dl_tls" {
					unallocated++
				}
			case err != nil:
				t.Errorf("thread %d: &%s: %v", th.TID(), name, err)
			case fmt.Sprintf("%#x", n) != want:
				t.Errorf("thread %d: &%s = %#x, the thread printed %s", th.TID(), name, n, want)
			default:
				compared++
			}
		}
		if lay, _ := st.TLSLayout(); lay == nil || lay.Source != "link_map contents" {
			t.Errorf("layout %+v, want one found in a link_map", lay)
		}
	}
	if want := 4*len(names) - 4; compared != want || unallocated != 2 {
		t.Errorf("%d addresses compared (want %d), %d unallocated (want 2)", compared, want, unallocated)
	}
}

// readAddresses reads tls_main's report: per thread, each variable's
// printed address.
func readAddresses(path string) map[int]map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[int]map[string]string{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		w := strings.Fields(sc.Text())
		if len(w) < 2 || w[0] != "thread" {
			continue
		}
		var tid int
		fmt.Sscan(w[1], &tid)
		m := map[string]string{}
		for i := 2; i+2 < len(w); i += 3 {
			m[w[i]] = w[i+2]
		}
		out[tid] = m
	}
	return out
}
