package probes

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// The cost of a hit: pr_bench calls hot() N times in a loop timed with the
// thread's CPU clock (so that time the VM gives other processes does not
// count) and prints the loop's nanoseconds. Each sub-benchmark runs the
// program b.N times and reports the median ns per call; run them together
// (-benchtime=5x) so that all are measured on the same machine in one go:
//
//	go test -run '^$' -bench ProbeCost -benchtime 5x ./translate/probes/

var nsLine = regexp.MustCompile(`ns=(\d+) wall=(\d+) calls=(\d+)`)

func buildBench(b *testing.B, pie bool) string {
	flags, name := []string{"-O2"}, "pr_bench_pie"
	if !pie {
		flags, name = append(flags, "-no-pie", "-fno-pie"), "pr_bench_nopie"
	}
	return testprog.Build(b, testprog.Spec{Sources: []string{"pr_bench.c"}, Flags: flags, Name: name})
}

// perCall parses the program's line into CPU and wall-clock ns per call.
func perCall(b *testing.B, out string) [2]float64 {
	m := nsLine.FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("no timing line in %q", out)
	}
	ns, _ := strconv.ParseFloat(m[1], 64)
	wall, _ := strconv.ParseFloat(m[2], 64)
	n, _ := strconv.ParseFloat(m[3], 64)
	return [2]float64{ns / n, wall / n}
}

func median(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}

// measure runs one configuration b.N times and reports its median.
func measure(b *testing.B, once func() [2]float64) {
	var cpu, wall []float64
	for i := 0; i < b.N; i++ {
		v := once()
		cpu, wall = append(cpu, v[0]), append(wall, v[1])
	}
	b.ReportMetric(median(cpu), "cpu-ns/call")
	b.ReportMetric(median(wall), "wall-ns/call")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkProbeCost(b *testing.B) {
	const n = 10_000_000
	const slow = 2_000 // for mechanisms that trap on every hit
	for _, pie := range []bool{false, true} {
		path := buildBench(b, pie)
		suffix := "nopie"
		if pie {
			suffix = "pie"
		}
		b.Run("baseline-"+suffix, func(b *testing.B) {
			measure(b, func() [2]float64 {
				out, err := exec.Command(path, fmt.Sprint(n)).Output()
				if err != nil {
					b.Fatal(err)
				}
				return perCall(b, string(out))
			})
		})
		b.Run("sonde-probe-"+suffix, func(b *testing.B) {
			measure(b, func() [2]float64 {
				r := start(b, path, fmt.Sprint(n))
				if p := r.probe("hot"); p.Kind != KindProbe {
					b.Fatalf("hot: %s (%s)", p.Kind, p.Fallback)
				}
				out := r.finish()
				r.tg.Close()
				return perCall(b, out)
			})
		})
		b.Run("sonde-probe-if-false-"+suffix, func(b *testing.B) {
			measure(b, func() [2]float64 {
				r := start(b, path, fmt.Sprint(n))
				addr, fn := r.function("hot")
				p, err := r.set.AddTrapIf("hot", addr, fn, Cond{Left: Operand{Reg: "rdi"}, Op: "==", Right: -1}, nil)
				if err != nil || p.Kind != KindProbe {
					b.Fatalf("hot: %v %v", p, err)
				}
				out := r.finish()
				r.tg.Close()
				return perCall(b, out)
			})
		})
		b.Run("sonde-stop-if-false-"+suffix, func(b *testing.B) {
			// A conditional breakpoint as the agent plants it (AddStopIf):
			// `x == -1 || x == -2 && gvar != 0`, compiled, never true.
			measure(b, func() [2]float64 {
				r := start(b, path, fmt.Sprint(n))
				addr, fn := r.function("hot")
				x := Value{Reg: "rdi", Size: 8, Signed: true}
				cond := &Expr{Op: "||", L: &Expr{Cmp: &Compare{Value: x, Op: "==", Const: -1}},
					R: &Expr{Cmp: &Compare{Value: x, Op: "==", Const: -2}}}
				if _, err := r.set.AddStopIf("hot", addr, fn, cond, nil); err != nil {
					b.Fatal(err)
				}
				out := r.finish()
				r.tg.Close()
				return perCall(b, out)
			})
		})
		b.Run("gdb-break-if-false-"+suffix, func(b *testing.B) {
			gdbRun(b, path, slow, "break hot if $rdi == -1 || $rdi == -2", "run")
		})
		b.Run("sonde-breakpoint-"+suffix, func(b *testing.B) {
			measure(b, func() [2]float64 {
				r := start(b, path, fmt.Sprint(slow))
				addr, _ := r.function("hot")
				if _, err := r.set.AddBreakpoint("hot", addr); err != nil {
					b.Fatal(err)
				}
				out := r.finish()
				r.tg.Close()
				return perCall(b, out)
			})
		})
		b.Run("gdb-dprintf-"+suffix, func(b *testing.B) {
			gdbRun(b, path, slow, `dprintf hot,"hit\n"`, "run")
		})
		b.Run("gdb-break-continue-"+suffix, func(b *testing.B) {
			gdbRun(b, path, slow, "break hot", "commands 1\nsilent\ncontinue\nend", "run")
		})
		if !pie { // gdbserver's in-process agent refuses PIE executables
			b.Run("gdbserver-ftrace-cond-"+suffix, func(b *testing.B) {
				ipa := "/usr/lib/libinproctrace.so"
				if _, err := exec.LookPath("gdbserver"); err != nil {
					b.Skip("gdbserver not installed (scripts/setup installs it)")
				}
				if _, err := os.Stat(ipa); err != nil {
					b.Skip("no " + ipa)
				}
				measure(b, func() [2]float64 { return gdbserverFtrace(b, ipa, path, n) })
			})
		}
	}
}

// gdbRun runs gdb in batch mode with the commands (from a script file, so
// that multi-line ones work) and measures the program's loop. With path
// set, the program is run with n as its argument.
func gdbRun(b *testing.B, path string, n int, cmds ...string) {
	gdbtest.Need(b)
	script := filepath.Join(b.TempDir(), "cmds.gdb")
	text := ""
	for _, c := range cmds {
		text += c + "\n"
	}
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	measure(b, func() [2]float64 {
		args := []string{"-x", script}
		if path != "" {
			args = append(args, "--args", path, fmt.Sprint(n))
		}
		out, err := gdbtest.Run(args...)
		if err != nil {
			b.Fatalf("gdb: %v\n%s", err, out)
		}
		return perCall(b, string(out))
	})
}

// gdbserverFtrace runs path under gdbserver with its in-process agent and a
// fast tracepoint on hot whose condition (compiled into the jump pad) never
// holds, and returns the program's timing.
func gdbserverFtrace(b *testing.B, ipa, path string, n int) [2]float64 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var progOut strings.Builder
	srv := exec.Command("gdbserver", "--once", "--wrapper", "env", "LD_PRELOAD="+ipa, "--", addr, path, fmt.Sprint(n))
	srv.Stdout = &progOut
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer srv.Process.Kill()
	listening := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		var seen strings.Builder
		signalled := false
		for {
			k, err := stderr.Read(buf)
			seen.Write(buf[:k])
			if !signalled && strings.Contains(seen.String(), "Listening on port") {
				close(listening)
				signalled = true
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		b.Fatal("gdbserver does not listen")
	}
	script := filepath.Join(b.TempDir(), "ftrace.gdb")
	text := "set pagination off\n"
	text += "target remote " + addr + "\nbreak main\ncontinue\nftrace hot if $rdi == -1\ntstart\ndelete 1\ncontinue\n"
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	out, err := gdbtest.Run("-x", script, path)
	if err != nil {
		b.Fatalf("gdb: %v\n%s", err, out)
	}
	srv.Wait() // the program's output is all in
	if !strings.Contains(string(out), "Fast tracepoint") {
		b.Fatalf("no fast tracepoint:\n%s", out)
	}
	return perCall(b, progOut.String())
}
