package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// o2Steps are gdb's commands from the breakpoint on luaH_resize in an -O2
// lua (ltable.c: setlimittosize and luaH_realasize inlined into it, lstate.c's
// init_registry its caller, luaH_new a call): the DAP client sends the
// same as stepIn, next and stepOut. Three of the stops follow gdb's rules
// for inlined code that GCC interleaves with its caller's: a next that
// returns from luaH_realasize to where setlimittosize's second code range
// abuts its first stops in setlimittosize (479: the middle of the inlined
// call, not its entry); a finish out of setlimittosize steps on in
// luaH_resize and stops at the first address of the next inlined call
// (setnodevector, shown at its call's line 558); and a next in the inlined
// init_registry that reaches a row of f_luaopen's (not a statement) goes on
// without a line and stops where init_registry's code resumes, an entry of
// the call shown at its line (f_luaopen:235).
var o2Steps = []string{"step", "step", "step", "next", "finish", "next", "finish", "next", "step", "finish", "next", "next"}

// TestDAPDebugClientLuaO2Steps: line stepping through inlined functions
// in Debian's lua5.4 built at -O2 stops where gdb's step, next and finish
// stop (gdb -batch on the same binary from the same breakpoint), compared
// by (function, line), gdb's stops at the entry of an inlined function
// included: where the line table has no statement there (ltable.c's
// setlimittosize at luaH_resize+36, rows not is_stmt) gdb's step stops
// showing the caller at the call's line (555), and the next step enters the
// inline frame without moving the pc (setlimittosize:282); so does sonde.
func TestDAPDebugClientLuaO2Steps(t *testing.T) {
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		t.Skip("SKIP: gdb is needed (scripts/setup installs it)")
	}
	node, modules := dcClient(t)
	root := buildDebianSource(t, "lua5.4", "lua-*", buildLua)
	srcs, _ := filepath.Glob(filepath.Join(root, "lua-*", "src"))
	if len(srcs) != 1 {
		t.Fatalf("lua's src directory: %v", srcs)
	}
	prog := filepath.Join(root, "lua-O2")
	if !dcFileExists(prog) {
		buildLuaOpt(t, srcs[0], prog+".tmp", "-O2")
		if err := os.Rename(prog+".tmp", prog); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.Symlink(prog, filepath.Join(dir, "lua")); err != nil {
		t.Fatal(err)
	}
	script := "local t = {}\nfor i = 1, 10 do t[i] = i * i end\nprint(#t)\n"
	if err := os.WriteFile(filepath.Join(dir, "sq.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	steps, want := gdbO2Stops(t, gdb, dir, "luaH_resize", o2Steps)
	t.Logf("gdb: %s: %v", strings.Join(steps, ","), want)
	expect := filepath.Join(dir, "expect.json")
	b, _ := json.Marshal(want)
	if err := os.WriteFile(expect, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "realprog.js", dir, []string{"--mode", "luastep", "--dir", dir, "--src", srcs[0],
		"--break", "luaH_resize", "--args", "sq.lua", "--steps", strings.Join(steps, ","), "--expect", expect}, []string{testprog.Sonde(t), "dap"})
}

// gdbO2Stops runs gdb -batch: the breakpoint, then the commands, printing
// the pc, function and line after each.
func gdbO2Stops(t *testing.T, gdb, dir, brk string, cmds []string) ([]string, [][]any) {
	t.Helper()
	report := `python print("STOP %x %s %d" % (gdb.selected_frame().pc(), gdb.selected_frame().name(), gdb.selected_frame().find_sal().line))`
	args := []string{"-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off", "-ex", "break " + brk, "-ex", "run sq.lua", "-ex", report}
	for _, c := range cmds {
		args = append(args, "-ex", c, "-ex", report)
	}
	args = append(args, "-ex", "kill", "./lua")
	cmd := exec.Command(gdb, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	type stop struct {
		cmd, pc, fn string
		line        int
	}
	var stops []stop
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "STOP" {
			continue
		}
		n, _ := strconv.Atoi(f[3])
		c := ""
		if i := len(stops); i > 0 {
			c = cmds[i-1]
		}
		stops = append(stops, stop{c, f[1], f[2], n})
	}
	if len(stops) != len(cmds)+1 {
		t.Fatalf("gdb stopped %d times for %d commands:\n%s", len(stops), len(cmds), out)
	}
	var steps []string
	var want [][]any
	for i := 0; i < len(stops); i++ {
		if i > 0 {
			steps = append(steps, stops[i].cmd)
		}
		want = append(want, []any{stops[i].fn, stops[i].line})
	}
	return steps, want
}
