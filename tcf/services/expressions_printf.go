package services

import (
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/variables"
)

// $printf(format, args...) in expressions, created ones and breakpoint
// conditions alike, as the C TCF agent offers it (dprintf.c): it formats its
// arguments C printf style into a DPrintf stream (see dprintf.go for which
// one) and evaluates to int 0, anywhere in an expression:
// `x > 3 && $printf("%d\n", x)` prints only when x > 3, as C's short
// circuit says. The format is a string: an array of char, a literal or a
// variable. The other $names are in expressions_intrinsics.go.

// printfOutput receives the text of one $printf call. A nil printfOutput
// means the call is only checked, never formatted: when the evaluating
// client opened no DPrintf stream, when only the expression's type is asked
// for (create, getContext, sizeof), or when an assignment evaluates it.
type printfOutput func(text string)

// channelOutput is where $printf writes for expressions a channel
// evaluates: its DPrintf stream, or nowhere.
func (a *Agent) channelOutput(ch *tcf.Channel) printfOutput {
	s := a.channelDPrintf(ch)
	if s == nil {
		return nil
	}
	return func(text string) {
		if text != "" {
			s.append([]byte(text))
		}
	}
}

// callPrintf is $printf(format, args...): it checks the call, formats it
// when out is set, and evaluates to int 0.
func callPrintf(args []*expr.Result, mem *target.Context, out printfOutput) (*expr.Result, error) {
	if len(args) == 0 {
		return nil, &printfError{msg: `$printf needs a format: $printf("format", args...)`}
	}
	format, err := printfFormat(args[0])
	if err != nil {
		return nil, err
	}
	if out != nil {
		vals := make([]printfArg, 0, len(args)-1)
		for _, r := range args[1:] {
			vals = append(vals, resultArg{r: r, mem: mem})
		}
		text, err := formatPrintf(format, vals)
		if err != nil {
			return nil, err
		}
		out(text)
	}
	return expr.IntResult(0), nil
}

// printfFormat returns the text of $printf's format argument, which must be
// a string: an array of char (the C agent takes arrays only, so a char *
// would be a pointer, not a format).
func printfFormat(r *expr.Result) (string, error) {
	t := r.Type.Strip()
	if t == nil || t.Kind != variables.KindArray || t.Elem.Strip() == nil ||
		!t.Elem.Strip().IsInteger() || t.Elem.ByteSize() != 1 {
		return "", &printfError{msg: "$printf's first argument must be a string (an array of char), not " + typeName(r.Type)}
	}
	if r.Value == nil {
		if r.LoadErr != nil {
			return "", r.LoadErr
		}
		return "", &printfError{msg: "$printf's format is not available"}
	}
	b := r.Value
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b), nil
}

func typeName(t *variables.Type) string {
	if t == nil {
		return "a value of no type"
	}
	return t.String()
}

// printfError is a malformed $printf call or format (INV_EXPRESSION, the C
// agent's code), or a string it cannot read (code set).
type printfError struct {
	msg  string
	code int
	err  error
}

func (e *printfError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *printfError) Unwrap() error { return e.err }

// TCFCode is the protocol error code.
func (e *printfError) TCFCode() int {
	if e.code != 0 {
		return e.code
	}
	return tcf.CodeInvalidExpression
}

// resultArg is an expression result read through the stopped thread.
type resultArg struct {
	r   *expr.Result
	mem *target.Context
}

func (v resultArg) IsFloat() bool {
	t := v.r.Type.Strip()
	return t != nil && t.Kind == variables.KindBase && t.Encoding == variables.EncFloat
}

func (v resultArg) Int() (int64, error) {
	if v.IsFloat() {
		f, err := v.r.Float()
		return int64(f), err
	}
	if v.r.Value == nil && v.r.LoadErr != nil {
		return 0, v.r.LoadErr
	}
	if t := v.r.Type.Strip(); t != nil && t.Kind == variables.KindArray && v.r.HasAddress {
		return int64(v.r.Address), nil // an array decays to its address
	}
	return v.r.Int()
}

func (v resultArg) Float() (float64, error) {
	if v.IsFloat() {
		return v.r.Float()
	}
	n, err := v.Int()
	return float64(n), err
}

func (v resultArg) String(max int) (string, error) {
	t := v.r.Type.Strip()
	if t != nil && t.Kind == variables.KindArray && v.r.Value != nil {
		b := v.r.Value
		if i := strings.IndexByte(string(b), 0); i >= 0 {
			b = b[:i]
		}
		if len(b) > max {
			b = b[:max]
		}
		return string(b), nil
	}
	addr, err := v.Int()
	if err != nil {
		return "", err
	}
	if addr == 0 {
		return "(null)", nil
	}
	return readCString(v.mem, uint64(addr), max)
}

// readCString reads a NUL-terminated string of at most max bytes, in small
// chunks so a string at the end of a mapping still reads.
func readCString(c *target.Context, addr uint64, max int) (string, error) {
	if c == nil {
		return "", &printfError{msg: "$printf: no target to read the string at 0x" + strconv.FormatUint(addr, 16), code: tcf.CodeInvalidAddress}
	}
	var out []byte
	buf := make([]byte, 64)
	for len(out) < max {
		chunk := buf
		// Stay within the page: the next one may be unmapped.
		if rem := int(4096 - addr%4096); rem < len(chunk) {
			chunk = chunk[:rem]
		}
		n, err := c.ReadMemory(addr, chunk)
		if i := strings.IndexByte(string(chunk[:n]), 0); i >= 0 {
			out = append(out, chunk[:i]...)
			break
		}
		out = append(out, chunk[:n]...)
		if err != nil || n == 0 {
			if len(out) == 0 {
				return "", &printfError{msg: "$printf: cannot read the string at 0x" + strconv.FormatUint(addr, 16), code: tcf.CodeInvalidAddress, err: err}
			}
			break
		}
		addr += uint64(n)
	}
	if len(out) > max {
		out = out[:max]
	}
	return string(out), nil
}
