package services

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/tcf"
)

// Fake $printf arguments for format tests.
type intArg int64
type floatArg float64
type strArg string

func (v intArg) Int() (int64, error)          { return int64(v), nil }
func (v intArg) Float() (float64, error)      { return float64(v), nil }
func (v intArg) IsFloat() bool                { return false }
func (v intArg) String(int) (string, error)   { return "", errors.New("not a string") }
func (v floatArg) Int() (int64, error)        { return int64(v), nil }
func (v floatArg) Float() (float64, error)    { return float64(v), nil }
func (v floatArg) IsFloat() bool              { return true }
func (v floatArg) String(int) (string, error) { return "", errors.New("not a string") }
func (v strArg) Int() (int64, error)          { return 0x1000, nil }
func (v strArg) Float() (float64, error)      { return 0, errors.New("not a number") }
func (v strArg) IsFloat() bool                { return false }
func (v strArg) String(max int) (string, error) {
	if len(v) > max {
		return string(v[:max]), nil
	}
	return string(v), nil
}

// printfCases are the lines of testdata/dis_svc_printf.c, in order.
var printfCases = []struct {
	format string
	args   []printfArg
}{
	{"%d|%i|%5d|%-5d|%05d|%+d|% d\n", []printfArg{intArg(42), intArg(-7), intArg(42), intArg(42), intArg(-42), intArg(5), intArg(5)}},
	{"%u|%x|%X|%#x|%o|%#o|%08.3x\n", []printfArg{intArg(-1), intArg(255), intArg(255), intArg(255), intArg(8), intArg(8), intArg(10)}},
	{"%hhd|%hd|%ld|%lld|%lu|%zx\n", []printfArg{intArg(300), intArg(70000), intArg(-5), intArg(1 << 40), intArg(-1), intArg(4096)}},
	{"%c|%s|%.2s|%8s|%-8s|%%\n", []printfArg{intArg('A'), strArg("abc"), strArg("abcdef"), strArg("hi"), strArg("hi")}},
	{"%f|%.2f|%e|%E|%10.3f|%-10.1e|%+f\n", []printfArg{floatArg(3.14), floatArg(2.71828), floatArg(12345.678), floatArg(0.000123), floatArg(-1.5), floatArg(1e10), floatArg(1.0)}},
	{"%g|%g|%g|%g|%g|%G|%#g|%.3g\n", []printfArg{floatArg(3.14), floatArg(0.0001), floatArg(0.00001), floatArg(123456.0), floatArg(1234567.0), floatArg(1e-10), floatArg(1.5), floatArg(3.14159)}},
	{"%g|%g|%.0f|%.0e|%05.1f\n", []printfArg{floatArg(0), floatArg(100), floatArg(2.5), floatArg(15), floatArg(-2.5)}},
	{"%p|%*d|%-*d|%.*f\n", []printfArg{intArg(0x1234), intArg(6), intArg(42), intArg(4), intArg(7), intArg(1), floatArg(9.87)}},
}

// TestFormatPrintfMatchesC compares the agent's printf with the C library's
// over the same formats and values.
func TestFormatPrintfMatchesC(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"dis_svc_printf.c"}})
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.SplitAfter(string(out), "\n")
	if len(want) != len(printfCases)+1 {
		t.Fatalf("C printed %d lines for %d cases", len(want)-1, len(printfCases))
	}
	for i, c := range printfCases {
		got, err := formatPrintf(c.format, c.args)
		if err != nil || got != want[i] {
			t.Errorf("%q: %q %v, C printf %q", c.format, got, err, want[i])
		}
	}
}

// printfEnv is a constant-only expression environment whose $printf writes
// to out, as the agent's does (no target: strings are literals).
func printfEnv(out *strings.Builder) *expr.Env {
	return &expr.Env{Intrinsic: func(name string) *expr.Intrinsic {
		if name != "printf" {
			return nil
		}
		return &expr.Intrinsic{Call: func(args []*expr.Result, effects bool) (*expr.Result, error) {
			if !effects {
				return callPrintf(args, nil, nil)
			}
			return callPrintf(args, nil, func(s string) { out.WriteString(s) })
		}}
	}}
}

// TestPrintfCalls evaluates $printf as an expression: the arguments are
// expression results (ints, chars, long longs, doubles, string literals),
// calls happen where C's evaluation order says, and the value is int 0.
func TestPrintfCalls(t *testing.T) {
	for _, c := range []struct{ src, out string }{
		{`$printf("%d|%s|%c|%5.2f|%x|%lld|%%|%-4s|%.3s\n", 6*7, "abc", 'A', 3.14159, 255, 1LL << 40, "hi", "abcdef")`,
			"42|abc|A| 3.14|ff|1099511627776|%|hi  |abc\n"},
		{`$printf("%u %hhd %#o %e %C", -1, 300, 8, 1.5f, 66)`, "4294967295 44 010 1.500000e+00 B"},
		{`$printf("plain" " joined")`, "plain joined"},
		{`1 < 2 && $printf("yes")`, "yes"},
		{`1 > 2 && $printf("no")`, ""},
		{`$printf("a") || $printf("b")`, "ab"},
		{`($printf("1"), $printf("2"))`, "12"},
		{`0 ? $printf("no") : $printf("%d", 3)`, "3"},
		{`sizeof($printf("no"))`, ""},
		{`$printf("%*d|%-*d|", 4, 7, 3, 8)`, "   7|8  |"},
	} {
		var out strings.Builder
		r, err := expr.Eval(c.src, printfEnv(&out))
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if out.String() != c.out {
			t.Errorf("%s printed %q, want %q", c.src, out.String(), c.out)
		}
		if n, err := r.Int(); err != nil || (n != 0 && !strings.HasPrefix(c.src, "sizeof")) {
			t.Errorf("%s = %d %v", c.src, n, err)
		}
	}
	var out strings.Builder
	r, err := expr.Eval(`$printf("x")`, printfEnv(&out))
	if err != nil || r.Type.String() != "int" || len(r.Value) != 4 || r.Value[0] != 0 {
		t.Errorf("$printf value: %+v %v, want int 0", r, err)
	}
}

// TestPrintfErrors checks malformed calls and formats are errors that say
// what is wrong, with the invalid-expression code, and print nothing.
func TestPrintfErrors(t *testing.T) {
	for _, c := range []struct{ src, msg string }{
		{"$printf", "$printf is a function"},
		{"$printf(", "unexpected end"},
		{"$printf()", "needs a format"},
		{"$printf(1)", "must be a string"},
		{`$printf("%d")`, "too few arguments"},
		{`$printf("%d %d", 1)`, "too few arguments"},
		{`$printf("%n", 1)`, "%n is not supported"},
		{`$printf("%y", 1)`, "unknown conversion %y"},
		{`$printf("abc`, "unterminated"},
		{`$printf("%99999999d", 1)`, "too large"},
		{`$printf("x" y)`, `expected ")"`},
		{`$printf("%`, "unterminated"},
		{`$printf("%")`, "format ends with %"},
		{`$printf("%5")`, "incomplete conversion"},
		{`$printf(1, $printf("%d"))`, "too few arguments"}, // arguments first, as in C
		{`$printf("%d", $printf("%d"))`, "too few arguments"},
	} {
		var out strings.Builder
		_, err := expr.Eval(c.src, printfEnv(&out))
		if err == nil || errCode(err) != tcf.CodeInvalidExpression || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v (code %d), want INV_EXPRESSION saying %q", c.src, err, errCode(err), c.msg)
		}
		if out.Len() != 0 {
			t.Errorf("%s printed %q", c.src, out.String())
		}
	}
	// A pointer needs a target to read the string from: an address error.
	var out strings.Builder
	_, err := expr.Eval(`$printf("%s", (char *)16)`, printfEnv(&out))
	if errCode(err) != tcf.CodeInvalidAddress {
		t.Errorf("%%s of a pointer without a target: %v", err)
	}
}

// FuzzDPrintf: any expression with $printf calls evaluates or fails cleanly,
// and one call's text stays within the output bound.
func FuzzDPrintf(f *testing.F) {
	f.Add(`(1 > 0) && $printf("i=%d s=%s f=%g\n", 3, "str", 2.5)`)
	f.Add(`$printf("%-*.*f|%#o|%hhx|%%|%p", -10, 3, 1.5, 8, 300, 0)`)
	f.Add(`$printf("\x4\0777" "more")`)
	f.Add(`$printf("%99999999d", 1)`)
	f.Add(`$printf("%s%s", "a", (char *)0)`)
	f.Add(`sizeof $printf("%d")`)
	f.Add(`$printf("%c%lc%C", 65, 66, 67) + $printf`)
	f.Fuzz(func(t *testing.T, src string) {
		var out strings.Builder
		_, _ = expr.Eval(src, printfEnv(&out))
		calls := strings.Count(src, "$printf")
		if out.Len() > calls*(maxPrintfOutput+maxPrintfString) {
			t.Fatalf("%d calls printed %d bytes", calls, out.Len())
		}
	})
}

// BenchmarkPrintfCall is one $printf expression without a target: parse,
// evaluation of the arguments, and formatting.
func BenchmarkPrintfCall(b *testing.B) {
	var out strings.Builder
	env := printfEnv(&out)
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		if _, err := expr.Eval(`x > 3 && $printf("i=%d s=%s f=%g x=%#x\n", 42, "str", 2.5, 255)`, env); err == nil {
			b.Fatal("x is unknown here: want an error")
		}
		if _, err := expr.Eval(`$printf("i=%d s=%s f=%g x=%#x\n", 42, "str", 2.5, 255)`, env); err != nil {
			b.Fatal(err)
		}
	}
	if out.String() != "i=42 s=str f=2.5 x=0xff\n" {
		b.Fatalf("printed %q", out.String())
	}
}
