package services

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

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

// TestPrintfErrors checks malformed calls and formats are errors that say
// what is wrong, with the invalid-expression code.
func TestPrintfErrors(t *testing.T) {
	for _, cond := range []string{"$printf", "$printf(", "$printf()", "$printf(1)", `$printf("%d")`,
		`$printf("%n", 1)`, `$printf("%q", 1)`, `$printf("abc`, `$printf("a")+("b")`, `$printf("%99999999d", 1)`, `$printf("x" y)`} {
		var err error
		if args, ok, perr := printfCall(cond); perr != nil {
			err = perr
		} else if ok {
			var format string
			if format, err = cStringLiteral(args[0]); err == nil {
				vals := []printfArg{}
				for range args[1:] {
					vals = append(vals, intArg(1))
				}
				_, err = formatPrintf(format, vals)
			}
		}
		var pe *printfError
		if !errors.As(err, &pe) || pe.TCFCode() != tcf.CodeInvalidExpression {
			t.Errorf("%s: %v, want a $printf error", cond, err)
		}
	}
	// Escapes and concatenated literals.
	s, err := cStringLiteral(`"a\tb\x41\101\n" "c\"d\\"`)
	if err != nil || s != "a\tbAA\nc\"d\\" {
		t.Errorf("literal: %q %v", s, err)
	}
	// Conditions: split at top-level && only.
	parts, err := splitTop(`(a && b) && $printf("x && y, %d", f(1, 2))`, "&&")
	if err != nil || len(parts) != 2 || strings.TrimSpace(parts[1]) != `$printf("x && y, %d", f(1, 2))` {
		t.Errorf("split: %q %v", parts, err)
	}
}

// FuzzDPrintf: any condition text parses or fails cleanly, and any format
// formats or fails cleanly within the output bound.
func FuzzDPrintf(f *testing.F) {
	f.Add(`(x > 1) && $printf("i=%d s=%s f=%g\n", i, s, f)`)
	f.Add(`$printf("%-*.*f|%#o|%hhx|%%|%p", -10, 3, 1.5, 8, 300, 0)`)
	f.Add(`$printf("\x4\0777" "more")`)
	f.Add(`$printf("%99999999d", 1)`)
	f.Fuzz(func(t *testing.T, cond string) {
		parts, err := splitTop(cond, "&&")
		if err != nil {
			return
		}
		for _, p := range parts {
			args, ok, err := printfCall(p)
			if err != nil || !ok {
				continue
			}
			format, err := cStringLiteral(args[0])
			if err != nil {
				continue
			}
			vals := []printfArg{intArg(-3), floatArg(2.5), strArg("str"), intArg(1 << 40)}
			out, err := formatPrintf(format, vals)
			if err == nil && len(out) > maxPrintfOutput {
				t.Fatalf("output of %d bytes", len(out))
			}
		}
	})
}
