package ccond

import (
	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/translate/probes"
	"github.com/sondedbg/sonde/variables"
)

// Dynamic printf: a breakpoint condition `$printf("format", args...)` or
// `(cond) && $printf("format", args...)` (what Eclipse sends for a
// dynamic-printf breakpoint) becomes a recording probe: cond compiled as
// above, the format kept in the debugger, and each argument either a
// constant (an integer, a character, a string literal) or a variable the
// payload records (an integer, enum, bool, pointer, or a float in memory).
// Strings the program holds (char arrays, char pointers) are refused: the
// text would be read after the fact, when it may have changed.

// Printf is a compiled dynamic printf.
type Printf struct {
	Cond   *probes.Expr // nil: every hit prints
	Format string
	Args   []PrintfArg
}

// PrintfArg is one argument: a constant (Const) or a recorded variable
// (Value, its Type for formatting).
type PrintfArg struct {
	Const    bool
	Int      int64
	Str      string
	IsString bool
	Value    probes.Value
	Type     *variables.Type
}

// Values returns what the payload records: the variables, in order.
func (p *Printf) Values() []probes.Value {
	var out []probes.Value
	for _, a := range p.Args {
		if !a.Const {
			out = append(out, a.Value)
		}
	}
	return out
}

// CompilePrintf compiles a dynamic-printf condition at site.
func CompilePrintf(text string, site Site) (*Printf, error) {
	c, n, err := parseAt(text, site)
	if err != nil {
		return nil, err
	}
	out := &Printf{}
	call, ok := printfCall(n)
	if !ok {
		b, isAnd := n.(*expr.Binary)
		if !isAnd || b.Op != "&&" {
			return nil, refuse("not a dynamic printf")
		}
		if call, ok = printfCall(b.Y); !ok {
			return nil, refuse("not a dynamic printf")
		}
		if out.Cond, err = c.cond(b.X, 0); err != nil {
			return nil, err
		}
		if err := out.Cond.Check(); err != nil {
			return nil, err
		}
	}
	if len(call.Args) == 0 {
		return nil, refuse("$printf without a format")
	}
	f, ok := call.Args[0].(*expr.StringLit)
	if !ok {
		return nil, refuse("$printf's format is not a string literal")
	}
	out.Format = string(f.Value)
	recorded := 0
	for _, a := range call.Args[1:] {
		arg, err := c.printfArg(a)
		if err != nil {
			return nil, err
		}
		if !arg.Const {
			if recorded++; recorded > probes.MaxRecordValues {
				return nil, refuse("more than %d variables to record", probes.MaxRecordValues)
			}
		}
		out.Args = append(out.Args, arg)
	}
	return out, nil
}

// printfCall returns n as a call of $printf.
func printfCall(n expr.Node) (*expr.Call, bool) {
	c, ok := n.(*expr.Call)
	if !ok {
		return nil, false
	}
	r, ok := c.Fn.(*expr.Register)
	return c, ok && r.Name == "printf"
}

func (c *compiler) printfArg(n expr.Node) (PrintfArg, error) {
	if s, ok := n.(*expr.StringLit); ok {
		return PrintfArg{Const: true, IsString: true, Str: string(s.Value)}, nil
	}
	if k, err := c.constant(n, 0); err == nil {
		return PrintfArg{Const: true, Int: k.val}, nil
	}
	id, ok := n.(*expr.Ident)
	if !ok {
		return PrintfArg{}, refuse("$printf argument %s is not a variable or a constant", describe(n))
	}
	v, r, bias, err := c.lookup(id.Name)
	if err != nil {
		return PrintfArg{}, err
	}
	t := v.Type.Strip()
	if t == nil {
		return PrintfArg{}, refuse("%s has no type", id.Name)
	}
	size := int(t.ByteSize())
	float := t.Kind == variables.KindBase && t.Encoding == variables.EncFloat
	switch {
	case t.Kind == variables.KindPointer:
		if e := t.Elem.Strip(); e != nil && e.IsInteger() && e.ByteSize() == 1 {
			return PrintfArg{}, refuse("%s is a string the program holds: it would be read after the fact", id.Name)
		}
	case float:
		if size != 4 && size != 8 {
			return PrintfArg{}, refuse("%s is a %d-byte float", id.Name, size)
		}
	case t.Kind == variables.KindEnum || t.Kind == variables.KindBase && t.Encoding != variables.EncComplexFloat:
	default:
		return PrintfArg{}, refuse("%s is a %s", id.Name, t.Kind)
	}
	switch size {
	case 1, 2, 4, 8:
	default:
		return PrintfArg{}, refuse("%s is %d bytes long", id.Name, size)
	}
	val, err := c.locate(v, r, bias)
	if err != nil {
		return PrintfArg{}, refuse("%s: %v", id.Name, err)
	}
	if float && val.Reg != "" {
		return PrintfArg{}, refuse("%s is a float in a register", id.Name)
	}
	val.Size, val.Signed = size, !float && t.IsSigned()
	return PrintfArg{Value: val, Type: v.Type}, nil
}
