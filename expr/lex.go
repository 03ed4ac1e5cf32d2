package expr

import (
	"strings"
)

// tokKind is a lexical token class.
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tRegister // $name
	tInt
	tFloat
	tChar
	tString
	tPunct
	tSymRef // ${ID}: a symbol, type, member or register named by a client's ID
)

type token struct {
	kind tokKind
	pos  int
	text string // identifier, register name, punctuator, or the literal's source
	// Decoded literals.
	ival   uint64
	fval   float64
	sval   []byte
	suffix string // integer/float suffix, lower-cased ("u", "l", "ul", "ll", "ull", "f")
}

// puncts are C's operators, longest first so the lexer can match greedily.
var puncts = []string{
	"<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "::",
	"+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "?", ":", "(", ")",
	"[", "]", ".", ",",
}

// MaxLength bounds the expression text.
const MaxLength = 1 << 16

// afterOperand reports whether the tokens so far end with an operand a
// member can be taken of: a name (not sizeof) or a closing bracket. A
// closing parenthesis is left out: (double).5 is a cast.
func afterOperand(out []token) bool {
	if len(out) == 0 {
		return false
	}
	t := out[len(out)-1]
	return t.kind == tIdent && t.text != "sizeof" && t.text != "alignof" && t.text != "_Alignof" || t.kind == tPunct && t.text == "]"
}

func lex(src string) ([]token, error) {
	if len(src) > MaxLength {
		return nil, errorf(ErrSyntax, MaxLength, "expression longer than %d bytes", MaxLength)
	}
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			out = append(out, token{kind: tIdent, pos: i, text: src[i:j]})
			i = j
			continue
		case c == '$' && i+1 < len(src) && src[i+1] == '{':
			j := strings.IndexByte(src[i+2:], '}')
			if j < 0 {
				return nil, errorf(ErrSyntax, i, "unterminated ${...}")
			}
			if j == 0 {
				return nil, errorf(ErrSyntax, i, "empty ${}")
			}
			out = append(out, token{kind: tSymRef, pos: i, text: src[i+2 : i+2+j]})
			i += j + 3
			continue
		case c == '$' && i+1 < len(src) && src[i+1] == '"':
			// $"name": a name with any characters (the C TCF agent's syntax).
			t, n, err := lexString(src, i+1)
			if err != nil {
				return nil, err
			}
			if len(t.sval) == 0 {
				return nil, errorf(ErrSyntax, i, "empty $\"\" name")
			}
			out = append(out, token{kind: tIdent, pos: i, text: string(t.sval)})
			i += 1 + n
			continue
		case c == '$':
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			if j == i+1 {
				return nil, errorf(ErrSyntax, i, "register name expected after $")
			}
			out = append(out, token{kind: tRegister, pos: i, text: src[i+1 : j]})
			i = j
			continue
		case c == '.' && afterOperand(out) && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			// self.0, t.1.0: a Rust tuple field, named __0 in DWARF (gdb's
			// Rust syntax). After an operand a number cannot follow.
			j := i + 1
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			out = append(out, token{kind: tPunct, pos: i, text: "."}, token{kind: tIdent, pos: i + 1, text: "__" + src[i+1:j]})
			i = j
			continue
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			t, n, err := lexNumber(src, i)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i += n
			continue
		case c == '\'':
			t, n, err := lexChar(src, i)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i += n
			continue
		case c == '"':
			t, n, err := lexString(src, i)
			if err != nil {
				return nil, err
			}
			// Adjacent string literals concatenate.
			if len(out) > 0 && out[len(out)-1].kind == tString {
				out[len(out)-1].sval = append(out[len(out)-1].sval, t.sval...)
			} else {
				out = append(out, t)
			}
			i += n
			continue
		}
		matched := false
		for _, p := range puncts {
			if strings.HasPrefix(src[i:], p) {
				out = append(out, token{kind: tPunct, pos: i, text: p})
				i += len(p)
				matched = true
				break
			}
		}
		if !matched {
			return nil, errorf(ErrSyntax, i, "unexpected character %q", c)
		}
	}
	out = append(out, token{kind: tEOF, pos: len(src)})
	return out, nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }

func lexNumber(src string, start int) (token, int, error) {
	i := start
	base := 10
	isFloat := false
	if strings.HasPrefix(src[i:], "0x") || strings.HasPrefix(src[i:], "0X") {
		base, i = 16, i+2
	} else if strings.HasPrefix(src[i:], "0b") || strings.HasPrefix(src[i:], "0B") {
		base, i = 2, i+2
	}
	digStart := i
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\'' && i+1 < len(src) && digitVal(src[i+1]) < base: // C++14 digit separators
		case digitVal(c) < base:
		case base == 10 && (c == '.' || c == 'e' || c == 'E'):
			isFloat = true
			if (c == 'e' || c == 'E') && i+1 < len(src) && (src[i+1] == '+' || src[i+1] == '-') {
				i++
			}
		case base == 16 && (c == '.' || c == 'p' || c == 'P'):
			isFloat = true
			if (c == 'p' || c == 'P') && i+1 < len(src) && (src[i+1] == '+' || src[i+1] == '-') {
				i++
			}
		default:
			goto done
		}
		i++
	}
done:
	body := strings.ReplaceAll(src[start:i], "'", "")
	j := i
	for j < len(src) && isIdentChar(src[j]) {
		j++
	}
	suffix := strings.ToLower(src[i:j])
	t := token{pos: start, text: src[start:j], suffix: suffix}
	if i == digStart && base != 10 {
		return t, 0, errorf(ErrSyntax, start, "malformed number %q", src[start:j])
	}
	if isFloat || (base == 10 && (suffix == "f" || suffix == "l") && strings.ContainsAny(body, ".eE")) {
		switch suffix {
		case "", "f", "l":
		default:
			return t, 0, errorf(ErrSyntax, start, "invalid suffix %q on floating constant", suffix)
		}
		f, err := parseFloat(body)
		if err != nil {
			return t, 0, errorf(ErrSyntax, start, "malformed floating constant %q", body)
		}
		t.kind, t.fval = tFloat, f
		return t, j - start, nil
	}
	switch suffix {
	case "", "u", "l", "ul", "lu", "ll", "ull", "llu":
	default:
		return t, 0, errorf(ErrSyntax, start, "invalid suffix %q on integer constant", suffix)
	}
	digits := body
	if base != 10 {
		digits = body[2:]
	} else if len(body) > 1 && body[0] == '0' {
		base, digits = 8, body[1:]
	}
	var v uint64
	for k := 0; k < len(digits); k++ {
		d := digitVal(digits[k])
		if d >= base {
			return t, 0, errorf(ErrSyntax, start+k, "invalid digit %q in constant", digits[k])
		}
		nv := v*uint64(base) + uint64(d)
		if (nv-uint64(d))/uint64(base) != v {
			return t, 0, errorf(ErrSyntax, start, "integer constant %q is too large", body)
		}
		v = nv
	}
	t.kind, t.ival = tInt, v
	return t, j - start, nil
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return 99
}

// escape decodes one escape sequence after the backslash at src[i]; it
// returns the byte and the length consumed (including the backslash).
func escape(src string, i int) (byte, int, error) {
	if i+1 >= len(src) {
		return 0, 0, errorf(ErrSyntax, i, "unterminated escape sequence")
	}
	switch c := src[i+1]; c {
	case 'n':
		return '\n', 2, nil
	case 't':
		return '\t', 2, nil
	case 'r':
		return '\r', 2, nil
	case 'a':
		return 7, 2, nil
	case 'b':
		return 8, 2, nil
	case 'f':
		return 12, 2, nil
	case 'v':
		return 11, 2, nil
	case 'e':
		return 27, 2, nil
	case '\\', '\'', '"', '?':
		return c, 2, nil
	case 'x':
		j := i + 2
		v := 0
		for j < len(src) && digitVal(src[j]) < 16 && j < i+4 {
			v = v*16 + digitVal(src[j])
			j++
		}
		if j == i+2 {
			return 0, 0, errorf(ErrSyntax, i, "\\x without hex digits")
		}
		return byte(v), j - i, nil
	default:
		if c >= '0' && c <= '7' {
			j := i + 1
			v := 0
			for j < len(src) && j < i+4 && src[j] >= '0' && src[j] <= '7' {
				v = v*8 + int(src[j]-'0')
				j++
			}
			return byte(v), j - i, nil
		}
		return 0, 0, errorf(ErrSyntax, i, "unknown escape sequence \\%c", c)
	}
}

// lexQuoted reads the body of a literal that opens at src[start] and ends at
// the next unescaped quote, with C escapes; end is the closing quote's index.
func lexQuoted(src string, start int, quote byte, what string) (v []byte, end int, err error) {
	i := start + 1
	for i < len(src) && src[i] != quote {
		if src[i] == '\\' {
			b, n, err := escape(src, i)
			if err != nil {
				return nil, 0, err
			}
			v = append(v, b)
			i += n
			continue
		}
		v = append(v, src[i])
		i++
	}
	if i >= len(src) {
		return nil, 0, errorf(ErrSyntax, start, "unterminated %s", what)
	}
	return v, i, nil
}

func lexChar(src string, start int) (token, int, error) {
	v, i, err := lexQuoted(src, start, '\'', "character constant")
	if err != nil {
		return token{}, 0, err
	}
	if len(v) == 0 {
		return token{}, 0, errorf(ErrSyntax, start, "empty character constant")
	}
	if len(v) > 4 {
		return token{}, 0, errorf(ErrSyntax, start, "character constant too long")
	}
	// Multi-character constants are implementation-defined: gcc packs them
	// big-endian into an int.
	var n uint64
	for _, b := range v {
		n = n<<8 | uint64(b)
	}
	if len(v) == 1 {
		n = uint64(int64(int8(v[0]))) // plain char is signed on x86-64
	}
	return token{kind: tChar, pos: start, text: src[start : i+1], ival: n}, i + 1 - start, nil
}

func lexString(src string, start int) (token, int, error) {
	v, i, err := lexQuoted(src, start, '"', "string literal")
	if err != nil {
		return token{}, 0, err
	}
	return token{kind: tString, pos: start, text: src[start : i+1], sval: v}, i + 1 - start, nil
}
