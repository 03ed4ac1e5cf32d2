package expr

import (
	"errors"

	"github.com/sondedbg/sonde/variables"
)

// Intrinsic is one of the debugger's own $names, which a front end gives
// meaning through Env.Intrinsic: a value such as $thread (the ID of the
// context an expression is evaluated in), or a function such as $printf,
// which formats its arguments in the debugger. Either or both may be set.
type Intrinsic struct {
	// Value, when set, is the value of $name written alone.
	Value func() (*Result, error)
	// Call, when set, evaluates $name(args...). The arguments are evaluated
	// left to right, each as Evaluate returns it (a value that could not be
	// loaded has LoadErr set). effects is false when only the result's type
	// is wanted (the operand of sizeof): the call must then have no effect.
	// Errors are returned to the caller of Evaluate unchanged, so a front
	// end can give them its own codes.
	Call func(args []*Result, effects bool) (*Result, error)
}

// KeywordType returns the C type named by base type keywords ("int",
// "unsigned long", "char"), or nil when the words name none.
func KeywordType(words ...string) *variables.Type { return keywordType(words) }

// IntResult is an int value, what a debugger function that returns nothing
// useful ($printf) evaluates to.
func IntResult(n int64) *Result {
	v := intValue(typeInt, uint64(n))
	return &Result{Type: v.t, Value: v.bytes}
}

// StringResult is a C string value: an array of char with the terminating
// NUL, as a string literal evaluates.
func StringResult(s string) *Result {
	b := append([]byte(s), 0)
	return &Result{Type: ArrayOf(typeChar, int64(len(b))), Value: b}
}

// dollar resolves $name: an intrinsic of the front end first (as the C TCF
// agent's identifier callbacks come before its registers), then a register.
func (e *evaluator) dollar(n *Register) (*value, error) {
	if in := e.intrinsic(n.Name); in != nil {
		if in.Value == nil {
			return nil, errorf(ErrSyntax, n.P, "$%s is a function: call it as $%s(...)", n.Name, n.Name)
		}
		r, err := in.Value()
		if err != nil {
			return nil, err
		}
		return resultValue(r, n.P)
	}
	return e.register(n)
}

func (e *evaluator) intrinsic(name string) *Intrinsic {
	if e.env.Intrinsic == nil {
		return nil
	}
	return e.env.Intrinsic(name)
}

// call evaluates a call. Only the front end's $functions are called: a
// function of the program would have to run in the target.
func (e *evaluator) call(n *Call, d int) (*value, error) {
	fn, ok := n.Fn.(*Register)
	if !ok {
		return nil, errorf(ErrUnsupported, n.P, "function calls are not evaluated")
	}
	in := e.intrinsic(fn.Name)
	if in == nil || in.Call == nil {
		if in != nil || e.arch().ByName(fn.Name) != nil {
			return nil, errorf(ErrSyntax, n.P, "$%s is not a function", fn.Name)
		}
		return nil, errorf(ErrNotFound, fn.P, "no function $%s", fn.Name)
	}
	args := make([]*Result, 0, len(n.Args))
	for _, a := range n.Args {
		v, err := e.eval(a, d)
		if err != nil {
			return nil, err
		}
		args = append(args, e.result(v, a.Pos()))
	}
	r, err := in.Call(args, e.typeOnly == 0)
	if err != nil {
		var coded interface{ TCFCode() int }
		if errors.As(err, &coded) {
			return nil, err
		}
		return nil, &Error{Kind: ErrOther, Pos: n.P, Msg: "$" + fn.Name, Err: err}
	}
	return resultValue(r, n.P)
}

// resultValue turns what an intrinsic returned back into an operand (an
// rvalue).
func resultValue(r *Result, pos int) (*value, error) {
	if r == nil || r.Type == nil {
		return nil, errorf(ErrOther, pos, "intrinsic returned no value")
	}
	if r.Value == nil && r.LoadErr != nil {
		return nil, r.LoadErr
	}
	return &value{t: r.Type, bytes: r.Value}, nil
}
