package expr_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// constExprs need no program: C's arithmetic, conversions and literals.
var constExprs = []string{
	"1+2*(3-4/2)", "10 / 3", "-10 / 3", "10 % -3", "-10 % 3", "7 - 8u", "-1 < 0u", "-1 < 0",
	"(unsigned char)300", "(signed char)200", "(short)-70000", "0x7fffffff + 1", "0xffffffff + 1",
	"0xffffffffu + 1", "1L << 40", "1u << 31", "-8 >> 1", "0x80000000 >> 4", "~0", "~0u", "!5", "!0",
	"'a'", "'\\n' + 1", "'\\x41'", "'\\101'", "sizeof(long)", "sizeof(char)", "sizeof(unsigned short)",
	"sizeof 1L", "sizeof(1u + 1L)", "017", "0b101", "1 ? 2 : 3", "0 ? 2 : 3.5", "3.5 * 2", "1e3 / 8",
	"7 / 2.0", "(int)3.99", "(int)-3.99", "(unsigned)-1", "(long)(unsigned)-1", "1.5f + 1", "0x1p4",
	"10 > 3 && 2 < 1", "10 > 3 || 2 < 1", "(1, 2)", "3 == 3.0", "5 & 3 | 8 ^ 1", "1 - - 1", "-(-5)",
	"(char)'a' + (char)1", "2147483647 + 1L", "18446744073709551615u", "-9223372036854775807L - 1",
}

// TestConstantsMatchGDB evaluates constant expressions without a target and
// compares them with gdb's C evaluator.
func TestConstantsMatchGDB(t *testing.T) {
	gdbtest.Need(t)
	q, _ := json.Marshal(constExprs)
	py := `
import gdb, json
out = {}
for e in json.load(open(EXPRS)):
    try:
        v = gdb.parse_and_eval(e)
        t = v.type.strip_typedefs()
        if t.code == gdb.TYPE_CODE_FLT:
            out[e] = {"f": float(v), "size": t.sizeof}
        else:
            out[e] = {"i": int(v), "size": t.sizeof}
    except gdb.error as x:
        out[e] = {"error": str(x)}
print("@@" + json.dumps(out))
`
	dir := t.TempDir()
	script, list := filepath.Join(dir, "consts.py"), filepath.Join(dir, "consts.json")
	py = strings.Replace(py, "EXPRS", strconv.Quote(list), 1)
	if err := os.WriteFile(script, []byte(py), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(list, q, 0o644); err != nil {
		t.Fatal(err)
	}
	// gdb needs an x86-64 program loaded to use its type sizes (LP64).
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O0"}, Name: "ex_vars_O0"})
	out := gdbtest.Batch(t, "-ex", "set language c", "-ex", "source "+script, exe)
	i := strings.Index(string(out), "@@")
	if i < 0 {
		t.Fatalf("gdb printed %s", out)
	}
	var want map[string]struct {
		I     *big     `json:"i"`
		F     *float64 `json:"f"`
		Size  int64    `json:"size"`
		Error string   `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out[i+2:]))), &want); err != nil {
		t.Fatal(err)
	}
	for _, src := range constExprs {
		w := want[src]
		got, err := expr.Eval(src, &expr.Env{})
		switch {
		case w.Error != "":
			t.Logf("%s: gdb: %s; sonde: %v", src, w.Error, err)
		case err != nil:
			t.Errorf("%s: gdb %v, sonde fails: %v", src, w, err)
		case w.F != nil:
			f, err := got.Float()
			if err != nil || math.Abs(f-*w.F) > 1e-12*math.Abs(*w.F) || got.Type.ByteSize() != w.Size {
				t.Errorf("%s: sonde %v (%d bytes, %v), gdb %v (%d bytes)", src, f, got.Type.ByteSize(), err, *w.F, w.Size)
			}
		case w.I != nil:
			n, err := got.Int()
			// sizeof is C's size_t (unsigned long) here; gdb types it int.
			sizeOK := got.Type.ByteSize() == w.Size || strings.HasPrefix(src, "sizeof")
			if err != nil || !w.I.equals(n) || !sizeOK {
				t.Errorf("%s: sonde %d (%s, %d bytes, %v), gdb %s (%d bytes)", src, n, got.Type, got.Type.ByteSize(), err, w.I.s, w.Size)
			}
		}
	}
}

// big holds gdb's integer as text (it may not fit an int64).
type big struct{ s string }

func (b *big) UnmarshalJSON(p []byte) error { b.s = string(p); return nil }

// equals compares with a signed or unsigned reading of n.
func (b *big) equals(n int64) bool {
	return b.s == jsonInt(n) || b.s == jsonUint(uint64(n))
}

func jsonInt(n int64) string   { p, _ := json.Marshal(n); return string(p) }
func jsonUint(n uint64) string { p, _ := json.Marshal(n); return string(p) }
