package expr

import (
	"strconv"
	"strings"
)

// MaxDepth bounds the nesting of a parsed expression (and so the recursion
// of the parser and the evaluator).
const MaxDepth = 200

// IsTypeFunc tells the parser whether an identifier names a type (a
// typedef), which decides whether "(name)x" is a cast. Nil means no
// identifier is a type.
type IsTypeFunc func(name string) bool

type parser struct {
	toks   []token
	i      int
	depth  int
	isType IsTypeFunc
}

// Parse parses one C/C++ expression.
func Parse(src string, isType IsTypeFunc) (Node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, isType: isType}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, errorf(ErrSyntax, t.pos, "unexpected %q after the expression", t.text)
	}
	return n, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}
func (p *parser) is(s string) bool { t := p.peek(); return t.kind == tPunct && t.text == s }
func (p *parser) isWord(s string) bool {
	t := p.peek()
	return t.kind == tIdent && t.text == s
}

func (p *parser) expect(s string) error {
	if !p.is(s) {
		t := p.peek()
		what := t.text
		if t.kind == tEOF {
			what = "end of expression"
		}
		return errorf(ErrSyntax, t.pos, "expected %q, found %q", s, what)
	}
	p.next()
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return errorf(ErrSyntax, p.peek().pos, "expression nested deeper than %d", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// expr parses a comma expression.
func (p *parser) expr() (Node, error) {
	x, err := p.assign()
	if err != nil {
		return nil, err
	}
	for p.is(",") {
		t := p.next()
		y, err := p.assign()
		if err != nil {
			return nil, err
		}
		x = &Binary{P: t.pos, Op: ",", X: x, Y: y}
	}
	return x, nil
}

var assignOps = map[string]bool{"=": true, "+=": true, "-=": true, "*=": true, "/=": true, "%=": true,
	"<<=": true, ">>=": true, "&=": true, "|=": true, "^=": true}

func (p *parser) assign() (Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.cond()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tPunct && assignOps[t.text] {
		p.next()
		y, err := p.assign()
		if err != nil {
			return nil, err
		}
		return &Binary{P: t.pos, Op: t.text, X: x, Y: y}, nil
	}
	return x, nil
}

func (p *parser) cond() (Node, error) {
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.is("?") {
		return c, nil
	}
	t := p.next()
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	y, err := p.cond()
	if err != nil {
		return nil, err
	}
	return &Cond{P: t.pos, C: c, X: x, Y: y}, nil
}

// binLevels lists binary operators by precedence, loosest first.
var binLevels = [][]string{
	{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", ">", "<=", ">="}, {"<<", ">>"},
	{"+", "-"}, {"*", "/", "%"},
}

func (p *parser) binary(level int) (Node, error) {
	if level == len(binLevels) {
		return p.unary()
	}
	x, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		found := false
		if t.kind == tPunct {
			for _, op := range binLevels[level] {
				if t.text == op {
					found = true
				}
			}
		}
		if !found {
			return x, nil
		}
		p.next()
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		x = &Binary{P: t.pos, Op: t.text, X: x, Y: y}
	}
}

func (p *parser) unary() (Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.peek()
	if t.kind == tPunct {
		switch t.text {
		case "-", "+", "!", "~", "*", "&":
			p.next()
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return &Unary{P: t.pos, Op: t.text, X: x}, nil
		case "++", "--":
			p.next()
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return &IncDec{P: t.pos, Op: t.text, X: x}, nil
		case "(":
			if p.startsType(p.i + 1) {
				p.next()
				tn, err := p.typeName()
				if err != nil {
					return nil, err
				}
				if err := p.expect(")"); err != nil {
					return nil, err
				}
				x, err := p.unary()
				if err != nil {
					return nil, err
				}
				return &Cast{P: t.pos, T: tn, X: x}, nil
			}
		}
	}
	if t.kind == tIdent && t.text == "sizeof" {
		p.next()
		if p.is("(") && p.startsType(p.i+1) {
			p.next()
			tn, err := p.typeName()
			if err != nil {
				return nil, err
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			return &SizeofType{P: t.pos, T: tn}, nil
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &SizeofExpr{P: t.pos, X: x}, nil
	}
	return p.postfix()
}

var typeWords = map[string]bool{"void": true, "char": true, "short": true, "int": true, "long": true,
	"float": true, "double": true, "signed": true, "unsigned": true, "_Bool": true, "bool": true,
	"const": true, "volatile": true, "struct": true, "union": true, "enum": true, "class": true,
	"wchar_t": true, "char16_t": true, "char32_t": true}

// startsType reports whether the token at i begins a type name.
func (p *parser) startsType(i int) bool {
	t := p.toks[i]
	if t.kind == tSymRef {
		return p.isType != nil && p.isType("${"+t.text+"}")
	}
	if t.kind != tIdent {
		return false
	}
	if typeWords[t.text] {
		return true
	}
	if p.isType == nil {
		return false
	}
	// A qualified name: look at all of it.
	name := t.text
	for j := i + 1; j+1 < len(p.toks) && p.toks[j].kind == tPunct && p.toks[j].text == "::" && p.toks[j+1].kind == tIdent; j += 2 {
		name += "::" + p.toks[j+1].text
	}
	return p.isType(name)
}

func (p *parser) typeName() (*TypeName, error) {
	tn := &TypeName{P: p.peek().pos}
	if t := p.peek(); t.kind == tSymRef {
		p.next()
		tn.ByID = t.text
	}
	for tn.ByID == "" {
		t := p.peek()
		if t.kind != tIdent {
			break
		}
		switch t.text {
		case "const", "volatile":
			tn.Const = tn.Const || t.text == "const"
			p.next()
			continue
		case "struct", "union", "enum", "class":
			p.next()
			nt := p.next()
			if nt.kind != tIdent {
				return nil, errorf(ErrSyntax, nt.pos, "%s name expected", t.text)
			}
			tn.Tag, tn.Name = t.text, p.qualified(nt.text)
			continue
		}
		if typeWords[t.text] {
			tn.Words = append(tn.Words, t.text)
			p.next()
			continue
		}
		if tn.Name == "" && len(tn.Words) == 0 && tn.Tag == "" {
			p.next()
			tn.Name = p.qualified(t.text)
			continue
		}
		break
	}
	if tn.Name == "" && len(tn.Words) == 0 && tn.ByID == "" {
		return nil, errorf(ErrSyntax, p.peek().pos, "type name expected")
	}
	for {
		switch {
		case p.is("*"):
			p.next()
			tn.Ptrs++
			if tn.Ptrs > 16 {
				return nil, errorf(ErrSyntax, p.peek().pos, "too many '*'")
			}
			continue
		case p.isWord("const") || p.isWord("volatile"):
			p.next()
			continue
		case p.is("&"):
			p.next()
			tn.Ref = true
			continue
		}
		break
	}
	for p.is("[") {
		p.next()
		t := p.next()
		if t.kind != tInt {
			return nil, errorf(ErrSyntax, t.pos, "array size must be an integer constant")
		}
		tn.Dims = append(tn.Dims, t.ival)
		if len(tn.Dims) > 8 {
			return nil, errorf(ErrSyntax, t.pos, "too many array dimensions")
		}
		if err := p.expect("]"); err != nil {
			return nil, err
		}
	}
	return tn, nil
}

// qualified continues a name with "::part" tokens.
func (p *parser) qualified(name string) string {
	for p.is("::") && p.toks[p.i+1].kind == tIdent {
		p.next()
		name += "::" + p.next().text
	}
	return name
}

func (p *parser) postfix() (Node, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for n := 0; ; n++ {
		if n > MaxDepth {
			return nil, errorf(ErrSyntax, p.peek().pos, "too many postfix operators")
		}
		t := p.peek()
		if t.kind != tPunct {
			return x, nil
		}
		switch t.text {
		case "[":
			p.next()
			if err := p.enter(); err != nil {
				return nil, err
			}
			i, err := p.expr()
			p.leave()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			x = &Index{P: t.pos, X: x, I: i}
		case ".", "->":
			p.next()
			nt := p.next()
			switch nt.kind {
			case tIdent:
				x = &Member{P: t.pos, X: x, Name: nt.text, Arrow: t.text == "->"}
			case tSymRef:
				x = &Member{P: t.pos, X: x, Ref: nt.text, Arrow: t.text == "->"}
			default:
				return nil, errorf(ErrSyntax, nt.pos, "member name expected after %q", t.text)
			}
		case "(":
			p.next()
			var args []Node
			for !p.is(")") {
				if err := p.enter(); err != nil {
					return nil, err
				}
				a, err := p.assign()
				p.leave()
				if err != nil {
					return nil, err
				}
				args = append(args, a)
				if !p.is(",") {
					break
				}
				p.next()
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			x = &Call{P: t.pos, Fn: x, Args: args}
		case "++", "--":
			p.next()
			x = &IncDec{P: t.pos, Op: t.text, X: x, Post: true}
		default:
			return x, nil
		}
	}
}

func (p *parser) primary() (Node, error) {
	t := p.next()
	switch t.kind {
	case tIdent:
		if typeWords[t.text] {
			return nil, errorf(ErrSyntax, t.pos, "unexpected type name %q", t.text)
		}
		switch t.text {
		case "true":
			return &IntLit{P: t.pos, Value: 1, Suffix: "bool"}, nil
		case "false":
			return &IntLit{P: t.pos, Value: 0, Suffix: "bool"}, nil
		case "nullptr", "NULL":
			return &IntLit{P: t.pos, Value: 0, Suffix: "null"}, nil
		}
		return &Ident{P: t.pos, Name: p.qualified(t.text)}, nil
	case tRegister:
		return &Register{P: t.pos, Name: t.text}, nil
	case tSymRef:
		return &SymRef{P: t.pos, ID: t.text}, nil
	case tInt:
		dec := !(len(t.text) > 1 && t.text[0] == '0')
		return &IntLit{P: t.pos, Value: t.ival, Suffix: t.suffix, Decimal: dec}, nil
	case tChar:
		return &IntLit{P: t.pos, Value: t.ival, Char: true}, nil
	case tFloat:
		return &FloatLit{P: t.pos, Value: t.fval, Suffix: t.suffix}, nil
	case tString:
		return &StringLit{P: t.pos, Value: t.sval}, nil
	case tPunct:
		if t.text == "(" {
			if err := p.enter(); err != nil {
				return nil, err
			}
			x, err := p.expr()
			p.leave()
			if err != nil {
				return nil, err
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			return x, nil
		}
		if t.text == "::" { // ::global
			nt := p.next()
			if nt.kind != tIdent {
				return nil, errorf(ErrSyntax, nt.pos, "name expected after ::")
			}
			return &Ident{P: t.pos, Name: p.qualified(nt.text)}, nil
		}
	case tEOF:
		return nil, errorf(ErrSyntax, t.pos, "unexpected end of expression")
	}
	return nil, errorf(ErrSyntax, t.pos, "unexpected %q", t.text)
}

func parseFloat(s string) (float64, error) {
	s = strings.TrimRight(s, "fFlL")
	return strconv.ParseFloat(s, 64)
}
