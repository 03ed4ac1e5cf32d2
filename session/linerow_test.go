package session

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// TestLineRowMatchesGdb: at every instruction of an -O2 program's main
// (inlined calls, rows that are not statements, several rows at one
// address) LineRow gives the row gdb's find_pc_line gives: its line, its
// first address and the first address after it; none where gdb has no
// line.
func TestLineRowMatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	_, pid := deepTarget(t)
	script := gdbtest.Script(t, "rows.py", `import gdb
pc = int(gdb.parse_and_eval("(long)&main"))
b = gdb.block_for_pc(pc)
while b.function is None:
    b = b.superblock
for i in gdb.selected_frame().architecture().disassemble(b.start, b.end - 1):
    s = gdb.find_pc_line(i["addr"])
    if s.line == 0:
        print("ROW %d 0 0 0" % i["addr"])
    else:
        print("ROW %d %d %d %d" % (i["addr"], s.line, s.pc, s.last + 1))
`)
	out := gdbtest.Batch(t, "-p", strconv.Itoa(pid), "-ex", "source "+script)
	s := liveSession(t, pid)
	th := mainThread(t, s)
	rows := regexp.MustCompile(`(?m)^ROW (\d+) (\d+) (\d+) (\d+)$`).FindAllStringSubmatch(out, -1)
	if len(rows) < 20 {
		t.Fatalf("gdb gave %d rows:\n%s", len(rows), out)
	}
	stmts := 0
	for _, m := range rows {
		var v [4]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(m[i+1], 10, 64)
		}
		pc, line, start, end := v[0], int(v[1]), v[2], v[3]
		got, ok := s.LineRow(th, pc)
		if line == 0 {
			if ok {
				t.Errorf("%#x: sonde line %d [%#x, %#x), gdb none", pc, got.Line, got.Start, got.End)
			}
			continue
		}
		if got.IsStmt {
			stmts++
		}
		if !ok || got.Line != line || got.Start != start || got.End != end {
			t.Errorf("%#x: sonde line %d [%#x, %#x) %v, gdb line %d [%#x, %#x)", pc, got.Line, got.Start, got.End, ok, line, start, end)
		}
	}
	if stmts == 0 || stmts == len(rows) {
		t.Errorf("%d of %d rows are statements: the comparison wants both kinds", stmts, len(rows))
	}
}
