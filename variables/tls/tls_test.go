package tls_test

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/tls"
	"github.com/sondedbg/sonde/variables/vartest"
)

// tlsExprs are evaluated in every thread of tls_main at its stop.
var tlsExprs = []string{
	"main_tls", "main_tls_d", "main_buf[4]", "&main_tls", "&main_tls_d",
	"lib_tls", "lib_pair.id", "lib_pair.weight", "lib_hidden", "&lib_tls", "&lib_pair.id", "&lib_hidden",
	"dl_tls", "dl_name[2]", "&dl_tls", "dl_unused", "ie_tls", "&ie_tls",
	"errno", "&errno",
}

// program is tls_main with its libraries, built with flags.
type program struct {
	exe, lib, dl, dlie string
}

// args are the program's arguments: the libraries to dlopen, the report.
func (p program) args(report string) []string { return []string{p.dl, p.dlie, report} }

func buildB(b *testing.B) program { return build(b, "O2-dwarf5", []string{"-O2", "-gdwarf-5"}) }

func build(t testing.TB, name string, flags []string) program {
	t.Helper()
	lib := testprog.Build(t, testprog.Spec{Sources: []string{"tls_lib.c"},
		Flags: append([]string{"-shared", "-fPIC"}, flags...), Name: "libtls_lib.so"})
	dl := testprog.Build(t, testprog.Spec{Sources: []string{"tls_dl.c"},
		Flags: append([]string{"-shared", "-fPIC"}, flags...), Name: "tls_dl.so"})
	dlie := testprog.Build(t, testprog.Spec{Sources: []string{"tls_dlie.c"},
		Flags: append([]string{"-shared", "-fPIC"}, flags...), Name: "tls_dlie.so"})
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"tls_main.c"},
		Flags: append(append([]string(nil), flags...), "-Wl,--no-as-needed", lib, "-Wl,-rpath,"+filepath.Dir(lib), "-ldl"),
		Name:  "tls_main_" + name})
	return program{exe: exe, lib: lib, dl: dl, dlie: dlie}
}

// report is what tls_main printed about one thread: values and addresses.
type report map[string][2]string

func readReport(t *testing.T, path string) map[int]report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]report{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 2 || w[0] != "thread" {
			t.Fatalf("report line %q", sc.Text())
		}
		tid, _ := strconv.Atoi(w[1])
		r := report{}
		for i := 2; i+2 < len(w); i += 3 {
			r[w[i]] = [2]string{w[i+1], w[i+2]}
		}
		out[tid] = r
	}
	return out
}

// env is an expression environment in frame 0 of a thread that finds
// globals of every module, as the TCF Expressions service does.
func env(t testing.TB, bins *session.Session, th *target.Context) (*expr.Env, *session.Stack) {
	t.Helper()
	st, err := bins.Stack(th, session.StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := st.Frame(0)
	e := &expr.Env{Frame: f}
	if r, err := f.Reader(); err == nil {
		e.Reader = r
		if chain, err := r.ScopesAt(variables.LookupPC(f)); err == nil {
			e.Scopes = variables.FrameScopes(chain, 0)
		}
	}
	mods, err := bins.Modules(th)
	if err != nil {
		t.Fatal(err)
	}
	e.Global = func(name string) (*variables.Variable, *variables.Reader, uint64, error) {
		return bins.FindGlobal(mods, name)
	}
	return e, st
}

// TestThreadLocalsMatchGDB reads __thread variables of the executable, of a
// library loaded at start (static TLS), of a dlopen'd library (dynamic TLS,
// allocated in two threads, not in the two others, one of which predates
// the dlopen), of a dlopen'd library with initial-exec TLS (static TLS
// placed at dlopen) and glibc's errno in every thread of a stopped process,
// and compares values and addresses with gdb and with what each thread
// printed about itself.
func TestThreadLocalsMatchGDB(t *testing.T) {
	for _, b := range []struct {
		name  string
		flags []string
		// gdb 13 is no reference for split DWARF: it cannot evaluate
		// DW_OP_constx (DWARF 5) and adds the PT_TLS address gcc's
		// .debug_addr holds (DWARF 4, see tls.Segment.Offset) for some
		// modules. The program's own report is the reference there.
		gdbWrong bool
	}{
		{"O0-dwarf4", []string{"-O0", "-gdwarf-4"}, false},
		{"O0-dwarf5", []string{"-O0", "-gdwarf-5"}, false},
		{"O2-dwarf4", []string{"-O2", "-gdwarf-4"}, false},
		{"O2-dwarf5", []string{"-O2", "-gdwarf-5"}, false},
		// Split DWARF: offsets come from .debug_addr (DW_OP_GNU_const_index,
		// DW_OP_constx), without the load bias addresses get.
		{"O2-split4", []string{"-O2", "-gdwarf-4", "-gsplit-dwarf"}, true},
		{"O0-split5", []string{"-O0", "-gdwarf-5", "-gsplit-dwarf"}, true},
	} {
		t.Run(b.name, func(t *testing.T) {
			p := build(t, b.name, b.flags)
			for _, bin := range []string{p.exe, p.lib, p.dl, p.dlie} {
				vartest.LinkDWO(t, bin)
			}
			reportPath := filepath.Join(t.TempDir(), "report")
			stop := vartest.GDBStopThreads(t, p.exe, p.args(reportPath), "stop_here", tlsExprs)
			printed := readReport(t, reportPath)
			_, threads := stop.Open(t)
			if len(threads) != 4 || len(printed) != 4 {
				t.Fatalf("%d threads in the core, %d reported", len(threads), len(printed))
			}
			bins := session.New(threads[0].Target(), session.Options{})
			withGDB, withReport, unallocated, withErrno := 0, 0, 0, false
			for _, th := range threads {
				want := stop.Results[th.TID()]
				self := printed[th.TID()]
				if want == nil || self == nil {
					t.Fatalf("thread %d: gdb %v, report %v", th.TID(), want, self)
				}
				e, _ := env(t, bins, th)
				for _, src := range tlsExprs {
					w := want[src]
					got, err := expr.Eval(src, e)
					if err == nil && got.LoadErr != nil {
						err = got.LoadErr
					}
					what := fmt.Sprintf("thread %d: %s", th.TID(), src)
					// The threads that never used tls_dl.so have no block
					// for it: gdb says so, and so must sonde.
					if _, used := self["dl_tls"]; !used && (strings.HasPrefix(src, "dl_") || strings.HasPrefix(src, "&dl_")) {
						if !errors.Is(err, tls.ErrNotAllocated) {
							t.Errorf("%s: the thread never used it; sonde: %v", what, err)
						} else if src == "dl_tls" {
							t.Logf("%s: %v", what, err)
						}
						if !b.gdbWrong && !strings.Contains(w.Error, "not yet allocated") {
							t.Errorf("%s: gdb says %+v", what, w)
						}
						unallocated++
						continue
					}
					if b.gdbWrong {
						continue
					}
					switch {
					case w.Error != "" && strings.Contains(src, "errno"):
						continue // no libc debug information: logged below
					case w.Error != "":
						t.Errorf("%s: gdb fails: %s", what, w.Error)
					case err != nil:
						t.Errorf("%s: gdb prints %s, sonde fails: %v", what, w.Value, err)
					case w.Int != nil:
						n, err := got.Int()
						if err != nil || n != *w.Int && uint64(n) != *w.Uint {
							t.Errorf("%s: sonde %#x (%v), gdb %s", what, n, err, w.Value)
						}
						if src == "errno" {
							withErrno = true
						}
						withGDB++
					case w.Float != nil:
						x, err := got.Float()
						if err != nil || math.Abs(x-*w.Float) > 1e-12 {
							t.Errorf("%s: sonde %v (%v), gdb %v", what, x, err, *w.Float)
						}
						withGDB++
					}
				}
				// What the thread printed about itself: every variable's
				// value and address (errno needs libc's debug information,
				// which gdb's answer tells).
				noLibcDWARF := want["errno"].Error != ""
				for name, va := range self {
					if name == "errno" && noLibcDWARF {
						withReport++
						continue
					}
					addr, err := expr.Eval("&"+name, e)
					if err != nil {
						t.Errorf("thread %d: &%s: %v", th.TID(), name, err)
						continue
					}
					a, _ := addr.Int()
					if fmt.Sprintf("%#x", a) != va[1] {
						t.Errorf("thread %d: &%s is %#x, the thread printed %s", th.TID(), name, a, va[1])
					}
					val, err := expr.Eval(name, e)
					if err != nil {
						t.Errorf("thread %d: %s: %v", th.TID(), name, err)
						continue
					}
					var s string
					if x, err := val.Float(); err == nil && val.Type.IsFloat() {
						s = strconv.FormatFloat(x, 'g', -1, 64)
					} else {
						n, _ := val.Int()
						s = strconv.FormatInt(n, 10)
					}
					if s != va[0] {
						t.Errorf("thread %d: %s = %s, the thread printed %s", th.TID(), name, s, va[0])
					}
					withReport++
				}
			}
			t.Logf("%d values compared with gdb, %d with the program's report, %d unallocated blocks recognized", withGDB, withReport, unallocated)
			if unallocated != 8 {
				t.Errorf("%d unallocated, want 8: the two threads that never used tls_dl.so's variables have no block for them", unallocated)
			}
			if !b.gdbWrong && !withErrno {
				t.Log("glibc's errno not compared with gdb: no libc debug information (libc6-dbg)")
			}
			if withReport != 28 || !b.gdbWrong && withGDB < 50 {
				t.Fatalf("only %d values compared with gdb, %d with the report", withGDB, withReport)
			}
		})
	}
}

// TestScanLayoutMatchesDWARF: the link_map layout found by content (the
// fallback without glibc's DWARF) is the one glibc's DWARF gives, for the
// executable and both libraries.
func TestScanLayoutMatchesDWARF(t *testing.T) {
	p := build(t, "O0-dwarf5", []string{"-O0", "-gdwarf-5"})
	reportPath := filepath.Join(t.TempDir(), "report")
	stop := vartest.GDBStopThreads(t, p.exe, p.args(reportPath), "stop_here", []string{"main_tls"})
	_, threads := stop.Open(t)
	bins := session.New(threads[0].Target(), session.Options{})
	_, st := env(t, bins, threads[0])
	lay, err := st.TLSLayout()
	if lay == nil {
		t.Skipf("no DWARF of the dynamic linker (libc6-dbg): %v", err)
	}
	if lay.Slotinfo == nil {
		t.Errorf("no slotinfo layout from the dynamic linker's DWARF")
	}
	proc := threads[0].Process()
	mods, err := modules.Find(proc)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := modules.FindRDebug(proc, mods.Main())
	if err != nil || rd == nil {
		t.Fatalf("r_debug: %v", err)
	}
	entries, err := modules.LinkMap(proc, rd.Map)
	if err != nil {
		t.Fatal(err)
	}
	scanned := 0
	for _, e := range entries {
		m := mods.ForAddress(e.Dynamic)
		if e.Dynamic == 0 || m == nil || m.VDSO {
			continue
		}
		b, err := bins.Binary(m)
		if err != nil {
			t.Fatal(err)
		}
		tm := &tls.Module{Name: m.Name, LinkMap: e.Addr, Bias: m.Bias}
		for _, ph := range b.ELF().Progs {
			if ph.Type == 7 { // PT_TLS
				tm.Segment = tls.Segment{Vaddr: ph.Vaddr, Filesz: ph.Filesz, Memsz: ph.Memsz, Align: ph.Align}
			}
		}
		if tm.Segment.Memsz == 0 {
			continue
		}
		got, err := tls.ScanLayout(memory{proc}, tm)
		if err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		if got.LinkMapOffset != lay.LinkMapOffset || got.LinkMapModID != lay.LinkMapModID || got.DTV != lay.DTV ||
			got.DTVEntry != lay.DTVEntry || got.DTVVal != lay.DTVVal {
			t.Errorf("%s: scanned layout %+v, DWARF's %+v", m.Name, got, lay)
		}
		// Both layouts find the same block in every thread.
		for _, th := range threads {
			regs, err := th.Registers()
			if err != nil {
				t.Fatal(err)
			}
			tp, err := regs.DWARF(58) // fs_base
			if err != nil {
				t.Fatal(err)
			}
			b1, err1 := tls.Block(memory{proc}, lay, tm, tp)
			b2, err2 := tls.Block(memory{proc}, got, tm, tp)
			if b1 != b2 || (err1 == nil) != (err2 == nil) {
				t.Errorf("%s thread %d: block %#x (%v) by DWARF, %#x (%v) by scan", m.Name, th.TID(), b1, err1, b2, err2)
			}
		}
		scanned++
	}
	if scanned < 5 { // executable, libtls_lib.so, tls_dl.so, tls_dlie.so, libc
		t.Errorf("only %d modules with TLS scanned", scanned)
	}
}

// memory adapts a target context to tls.Memory.
type memory struct{ c *target.Context }

func (m memory) ReadMemory(buf []byte, addr uint64) (int, error) { return m.c.ReadMemory(addr, buf) }

// TestStaticExecutable reads the thread-local variables of a statically
// linked program (no dynamic linker: the block ends at the thread pointer)
// in both threads, against gdb and the program's own report.
func TestStaticExecutable(t *testing.T) {
	exe, err := testprog.BuildE(testprog.Spec{Sources: []string{"tls_static.c"}, Flags: []string{"-O0", "-static"}, Name: "tls_static"})
	if err != nil {
		t.Skipf("no static glibc to link with: %v", err)
	}
	exprs := []string{"s_tls", "s_pair.big", "s_pad[5]", "&s_tls", "&s_pair.big", "&s_pad[5]", "s_pair.tag"}
	reportPath := filepath.Join(t.TempDir(), "report")
	stop := vartest.GDBStopThreads(t, exe, []string{reportPath}, "stop_here", exprs)
	printed := readReport(t, reportPath)
	_, threads := stop.Open(t)
	if len(threads) != 2 || len(printed) != 2 {
		t.Fatalf("%d threads in the core, %d reported", len(threads), len(printed))
	}
	bins := session.New(threads[0].Target(), session.Options{})
	compared := 0
	for _, th := range threads {
		e, _ := env(t, bins, th)
		for _, src := range exprs {
			if w := stop.Results[th.TID()][src]; w.Int == nil {
				t.Errorf("thread %d: %s: gdb %+v", th.TID(), src, w)
			} else if likeGDB(t, th.TID(), src, e, w) {
				compared++
			}
		}
		compared += addressesLikeReport(t, th.TID(), e, printed[th.TID()])
	}
	if compared != 2*(len(exprs)+3) {
		t.Fatalf("%d values compared", compared)
	}
}

// BenchmarkThreadLocal evaluates thread-local variables of three modules
// (static TLS of a library, dynamic TLS through the dtv, glibc's errno
// found in another module) in one thread of a core, warm.
func BenchmarkThreadLocal(b *testing.B) {
	p := buildB(b)
	reportPath := filepath.Join(b.TempDir(), "report")
	stop := vartest.GDBStopThreads(b, p.exe, p.args(reportPath), "stop_here", []string{"main_tls"})
	_, threads := stop.Open(b)
	bins := session.New(threads[0].Target(), session.Options{})
	for _, th := range threads {
		e, _ := env(b, bins, th)
		if _, err := expr.Eval("dl_tls", e); err != nil {
			continue // a thread without the dlopen'd block
		}
		for _, src := range []string{"lib_tls", "dl_tls", "errno"} {
			b.Run(src, func(b *testing.B) {
				if _, err := expr.Eval(src, e); err != nil {
					b.Skipf("%s: %v (errno needs libc's debug information)", src, err)
				}
				for i := 0; i < b.N; i++ {
					if _, err := expr.Eval(src, e); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		return
	}
	b.Fatal("no thread has every block")
}

// TestCXXThreadLocal reads C++ thread_local variables (namespaced, of class
// type initialized by a constructor on first use, file-static) in both
// threads against gdb and the program's report.
func TestCXXThreadLocal(t *testing.T) {
	for _, flags := range [][]string{{"-O0", "-gdwarf-5"}, {"-O2", "-gdwarf-4"}} {
		t.Run(flags[0]+flags[1], func(t *testing.T) {
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"tls_cxx.cc"}, Flags: flags, Name: "tls_cxx" + flags[0] + flags[1]})
			exprs := []string{"store::counter.hits", "store::counter.total", "store::plain", "ratio",
				"&store::counter.total", "&store::plain", "&ratio", "sizeof(store::counter)"}
			reportPath := filepath.Join(t.TempDir(), "report")
			stop := vartest.GDBStopThreads(t, exe, []string{reportPath}, "stop_here", exprs)
			printed := readReport(t, reportPath)
			_, threads := stop.Open(t)
			if len(threads) != 2 || len(printed) != 2 {
				t.Fatalf("%d threads in the core, %d reported", len(threads), len(printed))
			}
			bins := session.New(threads[0].Target(), session.Options{})
			compared := 0
			for _, th := range threads {
				e, _ := env(t, bins, th)
				for _, src := range exprs {
					if likeGDB(t, th.TID(), src, e, stop.Results[th.TID()][src]) {
						compared++
					}
				}
				compared += addressesLikeReport(t, th.TID(), e, printed[th.TID()])
			}
			if compared != 2*(len(exprs)+4) {
				t.Fatalf("%d values compared", compared)
			}
		})
	}
}

// likeGDB evaluates src in thread tid's frame (e) and compares it with
// gdb's answer w there, an integer or a float; it reports whether there
// was a value to compare (an error on either side is one: reported).
func likeGDB(t *testing.T, tid int, src string, e *expr.Env, w vartest.Result) bool {
	t.Helper()
	got, err := expr.Eval(src, e)
	if err == nil && got.LoadErr != nil {
		err = got.LoadErr
	}
	switch {
	case err != nil || w.Error != "":
		t.Errorf("thread %d: %s: sonde %v, gdb %+v", tid, src, err, w)
	case w.Float != nil:
		if x, _ := got.Float(); x != *w.Float {
			t.Errorf("thread %d: %s: sonde %v, gdb %s", tid, src, x, w.Value)
		}
		return true
	case w.Int != nil:
		if n, _ := got.Int(); n != *w.Int {
			t.Errorf("thread %d: %s: sonde %#x, gdb %s", tid, src, n, w.Value)
		}
		return true
	}
	return false
}

// addressesLikeReport compares the address of each variable thread tid
// printed about itself with sonde's (&name in e); it returns how many.
func addressesLikeReport(t *testing.T, tid int, e *expr.Env, self report) int {
	t.Helper()
	for name, va := range self {
		addr, err := expr.Eval("&"+name, e)
		if err != nil {
			t.Errorf("thread %d: &%s: %v", tid, name, err)
		} else if a, _ := addr.Int(); fmt.Sprintf("%#x", a) != va[1] {
			t.Errorf("thread %d: &%s is %#x, the thread printed %s", tid, name, a, va[1])
		}
	}
	return len(self)
}
