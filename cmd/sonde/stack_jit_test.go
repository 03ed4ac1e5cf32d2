package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// euStackPCs runs eu-stack on a live pid and returns each thread's pcs.
func euStackPCs(t *testing.T, pid int) map[int][]string {
	t.Helper()
	if _, err := exec.LookPath("eu-stack"); err != nil {
		t.Skip("eu-stack not installed (scripts/setup installs elfutils)")
	}
	out, err := exec.Command("eu-stack", "-p", strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		t.Fatalf("eu-stack: %v\n%s", err, out)
	}
	return parseEuStack(string(out))
}

// parseEuStack returns each thread's pcs from eu-stack's output.
func parseEuStack(out string) map[int][]string {
	res := map[int][]string{}
	tid := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "TID":
			tid, _ = strconv.Atoi(strings.TrimSuffix(f[1], ":"))
		case len(f) >= 2 && strings.HasPrefix(f[0], "#"):
			pc, _ := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
			res[tid] = append(res[tid], fmt.Sprintf("%#x", pc))
		}
	}
	return res
}

// TestStackThroughJITCode stops testdata/uw_jit with one thread blocked in
// code copied to anonymous executable memory and another in libc below such
// code, and checks sonde's walk against eu-stack's pc by pc to the outermost
// frame: the frame-pointer chain through code in no file is followed and
// validated, the words that look like addresses in the JIT frame ([rsp] is
// 0x300000000) never become frames, and the JIT frames are named from the
// perf map or the jitdump file the program writes (or not named, without).
func TestStackThroughJITCode(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"uw_jit.c"}, Flags: []string{"-O2"}})
	for _, mode := range []string{"map", "jitdump", "nomap"} {
		t.Run(mode, func(t *testing.T) {
			cmd := startStackProgram(t, path, mode)
			pid := cmd.Process.Pid
			t.Cleanup(func() {
				os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid))
				os.Remove(filepath.Join(os.TempDir(), fmt.Sprintf("jit-%d.dump", pid)))
			})
			got := sondeStacks(t, "--past-main", strconv.Itoa(pid))
			want := euStackPCs(t, pid)
			jitFrames := 0
			for _, th := range got.Threads {
				var pcs []string
				for _, f := range th.Frames {
					pcs = append(pcs, f.PC)
					if f.Module != "" {
						continue
					}
					jitFrames++
					name := ""
					if f.Function != nil {
						name = *f.Function
					}
					if wantName := map[string]string{"map": "jit_trampoline", "jitdump": "jit_trampoline_dump"}[mode]; name != wantName {
						t.Errorf("thread %d: JIT frame %s named %q, want %q", th.TID, f.PC, name, wantName)
					}
				}
				if strings.Join(pcs, " ") != strings.Join(want[th.TID], " ") {
					t.Errorf("thread %d: sonde %v\n eu-stack %v\n%s", th.TID, pcs, want[th.TID], dumpSonde(th))
				}
				if th.StopReason != "outermost" {
					t.Errorf("thread %d: stop %s %s", th.TID, th.StopReason, th.Error)
				}
			}
			if jitFrames != 7 {
				t.Errorf("%d frames in JIT code, want 7 (4 in the main thread, 3 in the worker)", jitFrames)
			}
		})
	}
}

// TestStackThroughNodeJIT runs node (Debian's nodejs: V8) blocked twenty
// JavaScript frames deep, in code its optimizing compiler wrote to anonymous
// memory, and checks every thread's walk against eu-stack's pc by pc
// (physical frames: no inline or tail-call frames) to _start or clone3; the
// JIT frames are named from the perf map node writes with --perf-basic-prof.
func TestStackThroughNodeJIT(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (scripts/setup installs nodejs)")
	}
	// --perf-basic-prof also writes V8's log: to the test's directory.
	logfile := filepath.Join(t.TempDir(), "v8.log")
	cmd := startStackProgram(t, node, "--perf-basic-prof", "--no-logfile-per-isolate", "--logfile="+logfile, testprog.Source("uw_node.js"))
	pid := cmd.Process.Pid
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })
	got := sondeStacks(t, "--past-main", "--no-inline", strconv.Itoa(pid))
	want := euStackPCs(t, pid)
	for _, th := range got.Threads {
		var pcs []string
		jit := 0
		for _, f := range th.Frames {
			if f.Kind == "tailcall" {
				continue
			}
			pcs = append(pcs, f.PC)
			if f.Module == "" && f.Function != nil && strings.HasPrefix(*f.Function, "JS:") && strings.Contains(*f.Function, "deep") {
				jit++
			}
		}
		if strings.Join(pcs, " ") != strings.Join(want[th.TID], " ") {
			t.Errorf("thread %d: sonde %v\n eu-stack %v\n%s", th.TID, pcs, want[th.TID], dumpSonde(th))
		}
		if th.TID != pid {
			continue
		}
		if jit < 10 {
			t.Errorf("%d frames of deep in JIT code named from the perf map, want 10 or more:\n%s", jit, dumpSonde(th))
		}
		if len(pcs) < 45 {
			t.Errorf("%d frames, want the whole stack:\n%s", len(pcs), dumpSonde(th))
		}
	}
}
