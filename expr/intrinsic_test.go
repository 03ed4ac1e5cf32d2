package expr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/expr"
)

// codedError is a front end's error with its own protocol code.
type codedError struct{}

func (codedError) Error() string { return "coded" }
func (codedError) TCFCode() int  { return 99 }

// intrinsicEnv is a constant-only environment with $thread, $f (records its
// calls and evaluates to int 0), $bad (fails with a coded error) and $plain
// (fails with a plain one).
func intrinsicEnv(calls *[]string) *expr.Env {
	return &expr.Env{Intrinsic: func(name string) *expr.Intrinsic {
		switch name {
		case "thread":
			return &expr.Intrinsic{Value: func() (*expr.Result, error) { return expr.StringResult("P1.1"), nil }}
		case "f":
			return &expr.Intrinsic{Call: func(args []*expr.Result, effects bool) (*expr.Result, error) {
				var b strings.Builder
				if !effects {
					b.WriteString("typeonly:")
				}
				for _, a := range args {
					if a.Type.Strip().IsInteger() {
						n, _ := a.Int()
						b.WriteString(strings.Repeat("i", int(n)))
					} else {
						b.WriteString(a.Type.String())
					}
					b.WriteByte(',')
				}
				*calls = append(*calls, b.String())
				return expr.IntResult(0), nil
			}}
		case "bad":
			return &expr.Intrinsic{Call: func([]*expr.Result, bool) (*expr.Result, error) { return nil, codedError{} }}
		case "plain":
			return &expr.Intrinsic{Call: func([]*expr.Result, bool) (*expr.Result, error) { return nil, errors.New("plain") }}
		}
		return nil
	}}
}

// TestIntrinsics checks $values and $function calls: arguments evaluated
// left to right, C's short circuit deciding whether a call happens, sizeof
// asking for the type only, and the result taking part in larger
// expressions.
func TestIntrinsics(t *testing.T) {
	for _, c := range []struct {
		src   string
		want  int64
		calls string
	}{
		{`$f(1, 2+1)`, 0, "i,iii,"},
		{`$f("ab")`, 0, "char [3],"},
		{`$f()`, 0, ""},
		{`1 > 2 && $f(1)`, 0, ""},
		{`1 < 2 && $f(1)`, 0, "i,"},
		{`$f(1) || $f(2)`, 0, "i,|ii,"},
		{`0 ? $f(1) : $f(3)`, 0, "iii,"},
		{`($f(1), 7)`, 7, "i,"},
		{`$f(1) + 5`, 5, "i,"},
		{`sizeof($f(2))`, 4, "typeonly:ii,"},
		{`sizeof $thread`, 5, ""},
		{`$thread[1]`, '1', ""},
		{`$f($f(1)) == 0`, 1, "i,|,"},
	} {
		var calls []string
		r, err := expr.Eval(c.src, intrinsicEnv(&calls))
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		n, err := r.Int()
		if err != nil || n != c.want {
			t.Errorf("%s = %d %v, want %d", c.src, n, err, c.want)
		}
		if got := strings.Join(calls, "|"); got != c.calls {
			t.Errorf("%s: calls %q, want %q", c.src, got, c.calls)
		}
	}
	var calls []string
	r, err := expr.Eval(`$thread`, intrinsicEnv(&calls))
	if err != nil || string(r.Value) != "P1.1\x00" || r.Type.String() != "char [5]" {
		t.Errorf("$thread: %v %q %v", r, r.Value, err)
	}
	r, err = expr.Eval(`$f(1)`, intrinsicEnv(&calls))
	if err != nil || r.Type.String() != "int" || len(r.Value) != 4 {
		t.Errorf("$f(1): %v %v, want int 0", r, err)
	}
}

// TestIntrinsicErrors: misuse is an error that says what is wrong, with the
// right kind; an intrinsic's own coded error passes through unchanged.
func TestIntrinsicErrors(t *testing.T) {
	for _, c := range []struct {
		src  string
		kind expr.ErrorKind
		msg  string
	}{
		{`$f`, expr.ErrSyntax, "$f is a function"},
		{`$f + 1`, expr.ErrSyntax, "$f is a function"},
		{`$thread(1)`, expr.ErrSyntax, "$thread is not a function"},
		{`$rax(1)`, expr.ErrSyntax, "$rax is not a function"},
		{`$nosuch(1)`, expr.ErrNotFound, "no function $nosuch"},
		{`f(1)`, expr.ErrUnsupported, "function calls are not evaluated"},
		{`$thread[0] = 2`, expr.ErrNotAssignable, ""},
		{`$f(1`, expr.ErrSyntax, ""},
		{`$plain()`, expr.ErrOther, "$plain"},
		{`$f(nosuch)`, expr.ErrNotFound, "nosuch"},
		{`$"a b" + 1`, expr.ErrNotFound, `"a b"`},
		{`$""`, expr.ErrSyntax, "empty"},
		{`$"abc`, expr.ErrSyntax, "unterminated"},
	} {
		var calls []string
		_, err := expr.Eval(c.src, intrinsicEnv(&calls))
		var e *expr.Error
		if !errors.As(err, &e) || e.Kind != c.kind || !strings.Contains(e.Error(), c.msg) {
			t.Errorf("%s: %v, want kind %d with %q", c.src, err, c.kind, c.msg)
		}
		if len(calls) != 0 {
			t.Errorf("%s: called %q", c.src, calls)
		}
	}
	var calls []string
	if _, err := expr.Eval(`1 && $bad()`, intrinsicEnv(&calls)); !errors.Is(err, codedError{}) {
		t.Errorf("$bad(): %v, want the intrinsic's own error", err)
	}
	// Without intrinsics, a $name call is an unknown function.
	if _, err := expr.Eval(`$printf("x")`, &expr.Env{}); err == nil || !strings.Contains(err.Error(), "no function $printf") {
		t.Errorf("no intrinsics: %v", err)
	}
}

// TestQuotedName: $"name" is a name that may hold any character.
func TestQuotedName(t *testing.T) {
	n, err := expr.Parse(`$"operator+" + $"x\"y"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := n.(*expr.Binary)
	if !ok {
		t.Fatalf("%#v", n)
	}
	x, okx := b.X.(*expr.Ident)
	y, oky := b.Y.(*expr.Ident)
	if !okx || !oky || x.Name != "operator+" || y.Name != `x"y` {
		t.Errorf("names: %#v %#v", b.X, b.Y)
	}
}

// FuzzIntrinsics evaluates arbitrary text with $names defined: errors are
// fine, panics and hangs are not, and a call inside sizeof never has an
// effect.
func FuzzIntrinsics(f *testing.F) {
	for _, s := range []string{
		`$f(1, "s", 2.5)`, `1 && $f(2) || $f(3)`, `sizeof($f(1))`, `$thread`, `$f`, `$f($f($f()))`,
		`$thread(1)`, `$"a b"`, `$"x"::y`, `$bad() ? 1 : 2`, `$plain()`, `$printf("%d\n", $pc)`, `$f(1,)`,
		`sizeof $f(sizeof $f(1))`, `&$f(1)`, `*$thread`, `$f(1) = 3`, `-$f(1)`, `$""`, `$"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var calls []string
		_, err := expr.Eval(src, intrinsicEnv(&calls))
		if err != nil {
			var e *expr.Error
			if !errors.As(err, &e) && !errors.Is(err, codedError{}) {
				t.Fatalf("error of type %T: %v", err, err)
			}
		}
	})
}
