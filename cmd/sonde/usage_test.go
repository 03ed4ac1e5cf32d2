package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestUsageErrors runs the built binary on each verb's usage mistakes: each
// prints "sonde VERB: what is wrong" and "Run 'sonde VERB --help' for usage."
// on stderr, nothing on stdout, and exits 2 (not the whole help text, which
// hides the one line that matters).
func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string // stderr's first line
	}{
		{[]string{"stack"}, "sonde stack: expected one PID (or --core CORE)"},
		{[]string{"stack", "--bogus", "1"}, "sonde stack: unknown flag --bogus"},
		{[]string{"stack", "-x", "1"}, "sonde stack: unknown flag -x"},
		{[]string{"stack", "--core"}, "sonde stack: --core needs a value"},
		{[]string{"stack", "--json=maybe", "1"}, `sonde stack: bad value "maybe" for --json: want true or false`},
		{[]string{"stack", "pid"}, `sonde stack: "pid" is not a process ID`},
		{[]string{"stack", "--exe", "/bin/true", "1"}, "sonde stack: --exe goes with --core (a live process's executable is the one it runs)"},
		{[]string{"stack", "--sysroot", "/", "1"}, "sonde stack: --sysroot goes with --core (a live process's files are the ones it mapped)"},
		{[]string{"maps", "--exe", "/bin/true", "1"}, "sonde maps: --exe goes with --core (a live process's executable is the one it runs)"},
		{[]string{"regs", "--sysroot", "/", "1"}, "sonde regs: --sysroot goes with --core (a live process's files are the ones it mapped)"},
		{[]string{"maps"}, "sonde maps: expected one PID (or --core CORE)"},
		{[]string{"maps", "--bogus"}, "sonde maps: unknown flag --bogus"},
		{[]string{"regs"}, "sonde regs: expected one PID (or --core CORE)"},
		{[]string{"regs", "1", "2"}, "sonde regs: expected one PID (or --core CORE)"},
		{[]string{"symbolize", "--bogus"}, "sonde symbolize: unknown flag --bogus"},
		{[]string{"symbolize", "-e", "x", "--pid", "1"}, "sonde symbolize: -e and --pid are exclusive"},
		{[]string{"trace"}, "sonde trace: give at least one --probe or --break LOC"},
		{[]string{"trace", "--probe", "main"}, "sonde trace: give -p PID or -- PROG ARGS"},
		{[]string{"trace", "--probe", "main", "-p", "1", "--duration", "x"}, `sonde trace: bad value "x" for --duration: want a duration such as 10s, 500ms or 1m30s`},
		{[]string{"profile"}, "sonde profile: give either -p PID or a program to run after --"},
		{[]string{"profile", "-F", "0", "-p", "1"}, "sonde profile: -F 0: want a positive rate (samples per second)"},
		{[]string{"profile", "-p", "1", "--", "true"}, "sonde profile: give either -p PID or a program to run after --, not both"},
		{[]string{"profile", "-F", "abc", "-p", "1"}, `sonde profile: bad value "abc" for -F: want a whole number`},
		{[]string{"perf", "flame"}, `sonde perf: unknown output "flame" (folded, pprof, script or report)`},
		{[]string{"perf", "report", "extra"}, `sonde perf: unexpected argument "extra"`},
		{[]string{"perf", "-i"}, "sonde perf: -i needs a value"},
		{[]string{"cache"}, "sonde cache: want one of list, verify, clear"},
		{[]string{"cache", "list", "extra"}, `sonde cache: unexpected argument "extra"`},
		{[]string{"cache", "prune"}, `sonde cache: unknown action "prune": want list, verify or clear`},
		{[]string{"agent", "extra"}, "sonde agent: agent takes no arguments"},
		{[]string{"agent", "--log-level", "loud"}, `sonde agent: bad --log-level "loud": want debug, info, warn or error`},
		{[]string{"dap", "extra"}, "sonde dap: dap takes no arguments"},
		{[]string{"dap", "--listen", "FOO:x"}, `sonde dap: bad --listen "FOO:x": want [TCP:]host:port`},
		{[]string{"agent", "--listen", "FOO:x"}, `sonde agent: bad --listen "FOO:x": want [TCP:]host:port`},
		{[]string{"version", "extra"}, "sonde version: version takes no arguments"},
		{[]string{"version", "--bogus"}, "sonde version: unknown flag --bogus"},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, c.args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		hint := "Run 'sonde " + c.args[0] + " --help' for usage."
		if code != 2 || out != "" || len(lines) != 2 || lines[0] != c.want || lines[1] != hint {
			t.Errorf("sonde %s: exit %d, stdout %q, stderr:\n%s\nwant exit 2, no stdout, stderr:\n%s\n%s",
				strings.Join(c.args, " "), code, out, errOut, c.want, hint)
		}
	}
	out, errOut, code := runCLI(t, "frob")
	if want := "sonde: unknown verb \"frob\"\nRun 'sonde --help' for the verbs.\n"; code != 2 || out != "" || errOut != want {
		t.Errorf("sonde frob: exit %d, stdout %q, stderr %q; want exit 2, stderr %q", code, out, errOut, want)
	}
}

// TestWrongFiles: a file of the wrong kind, a missing file or a PID that names
// no process fails (exit 1) with one line on stderr that names the file or
// PID, says what it is instead and what to do, not a parser's "bad magic".
func TestWrongFiles(t *testing.T) {
	text := filepath.Join(testprog.Root(), "testdata", "hello.c")
	exe := sondeCLI(t) // an ELF executable, not a core nor a perf.data file
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	const gone = "1073741800"          // above any pid_max
	notX := filepath.Join(dir, "prog") // an ELF executable without the x bits
	if b, err := os.ReadFile(exe); err != nil || os.WriteFile(notX, b, 0o644) != nil {
		t.Fatal("copying the sonde binary", err)
	}
	cases := []struct {
		args []string
		want []string // in stderr's one line
	}{
		{[]string{"stack", "--core", text}, []string{"sonde stack: " + text + " is not a core file (not ELF at all)", "gcore PID"}},
		{[]string{"stack", "--core", exe}, []string{"sonde stack: " + exe + " is not a core file but an ELF executable", "--exe"}},
		{[]string{"stack", "--core", dir}, []string{"sonde stack: " + dir + " is a directory, not a core file"}},
		{[]string{"stack", "--core", missing}, []string{"sonde stack: " + missing + ": no such file"}},
		{[]string{"maps", "--core", text}, []string{"sonde maps: " + text + " is not a core file"}},
		{[]string{"regs", "--core", exe}, []string{"sonde regs: " + exe + " is not a core file"}},
		{[]string{"stack", "--core", text, "--exe", text}, []string{"sonde stack: --exe " + text + " is not an ELF file", "the program the core was dumped from"}},
		{[]string{"stack", "--core", text, "--exe", missing}, []string{"sonde stack: --exe " + missing + ": no such file"}},
		{[]string{"stack", gone}, []string{"sonde stack: no such process " + gone, "ps or pgrep"}},
		{[]string{"maps", gone}, []string{"sonde maps: no such process " + gone}},
		{[]string{"regs", gone}, []string{"sonde regs: no such process " + gone}},
		{[]string{"symbolize", "--pid", gone, "0x10"}, []string{"sonde symbolize: no such process " + gone}},
		{[]string{"trace", "--probe", "main", "-p", gone}, []string{"sonde trace: no such process " + gone}},
		{[]string{"profile", "-p", gone, "--duration", "1s"}, []string{"sonde profile: no such process " + gone}},
		{[]string{"symbolize", "-e", text, "0x10"}, []string{"sonde symbolize: " + text + " is not an ELF file"}},
		{[]string{"symbolize", "-e", missing, "0x10"}, []string{"sonde symbolize: " + missing + ": no such file", "-e FILE"}},
		{[]string{"perf", "-i", text}, []string{"sonde perf: " + text + " is not a perf.data file (no PERFILE2 magic)", "perf record"}},
		{[]string{"perf", "-i", exe}, []string{"sonde perf: " + exe + " is not a perf.data file (it is an ELF executable)"}},
		{[]string{"perf", "-i", missing}, []string{"sonde perf: " + missing + ": no such file", "perf record"}},
		// The program to start (trace, profile): what is wrong, what to do.
		{[]string{"trace", "--probe", "main", "--", missing}, []string{"sonde trace: " + missing + ": no such file", "give the path of the program to run after --"}},
		{[]string{"trace", "--probe", "main", "--", dir}, []string{"sonde trace: " + dir + " is a directory, not a program"}},
		{[]string{"trace", "--probe", "main", "--", text}, []string{"sonde trace: " + text + " is not a program (neither an ELF executable nor a #! script)"}},
		{[]string{"trace", "--probe", "main", "--", "sonde-no-such-program"}, []string{"sonde trace: sonde-no-such-program: no such program in $PATH", "path"}},
		{[]string{"trace", "--probe", "main", "--", notX}, []string{"sonde trace: " + notX + " is not executable; make it so with 'chmod +x " + notX + "'"}},
		{[]string{"profile", "--", missing}, []string{"sonde profile: " + missing + ": no such file"}},
		{[]string{"profile", "--", dir}, []string{"sonde profile: " + dir + " is a directory"}},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, c.args...)
		ok := code == 1 && out == "" && strings.Count(errOut, "\n") == 1 && !strings.Contains(errOut, "magic number")
		for _, w := range c.want {
			ok = ok && strings.Contains(errOut, w)
		}
		if !ok {
			t.Errorf("sonde %s: exit %d, stdout %q, stderr %q; want exit 1, one line with %q",
				strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}
