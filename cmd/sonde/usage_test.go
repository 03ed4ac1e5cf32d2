package main

import (
	"strings"
	"testing"
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
		{[]string{"profile", "-F", "abc", "-p", "1"}, `sonde profile: bad value "abc" for -F: want a whole number`},
		{[]string{"perf", "flame"}, `sonde perf: unknown output "flame" (folded, pprof, script or report)`},
		{[]string{"perf", "report", "extra"}, `sonde perf: unexpected argument "extra"`},
		{[]string{"perf", "-i"}, "sonde perf: -i needs a value"},
		{[]string{"cache"}, "sonde cache: want one of list, verify, clear"},
		{[]string{"cache", "prune"}, `sonde cache: unknown action "prune": want list, verify or clear`},
		{[]string{"agent", "extra"}, "sonde agent: agent takes no arguments"},
		{[]string{"agent", "--log-level", "loud"}, `sonde agent: bad --log-level "loud": want debug, info, warn or error`},
		{[]string{"dap", "extra"}, "sonde dap: dap takes no arguments"},
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
}
