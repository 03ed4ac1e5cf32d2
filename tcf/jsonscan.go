package tcf

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a strict JSON reader for argument and result fields. It does
// what encoding/json's Decoder with UseNumber did for them — numbers kept as
// their exact text, invalid UTF-8 and lone surrogates read as U+FFFD, at
// most maxJSONDepth nested arrays and objects — without the per-call
// Decoder, its buffer and its byte-at-a-time state machine: every command
// and every reply goes through here, so it is on the agent's hot path and
// on the Go client's.

// maxJSONDepth bounds the nesting of arrays and objects, as in
// encoding/json: deeper input is a syntax error, never a stack overflow.
const maxJSONDepth = 10000

// JSONSyntaxError reports malformed JSON in a field: what is wrong and at
// which byte of the field's text. Its message is encoding/json's for the
// same input (clients and golden replies see it), without the offset.
type JSONSyntaxError struct {
	Offset int
	Msg    string
}

func (e *JSONSyntaxError) Error() string { return e.Msg }

// TCFCode makes malformed JSON a JSON syntax error report.
func (e *JSONSyntaxError) TCFCode() int { return CodeJSONSyntax }

// jsonParser reads one JSON text. Syntax errors end the parse; type
// mismatches found while decoding into Go values are remembered in typeErr
// and the value is skipped, so a later syntax error still wins (as with
// encoding/json, which checks the whole text first).
type jsonParser struct {
	data    []byte
	pos     int
	depth   int
	typeErr error
	scratch []byte // unescaped object keys
}

// plainString marks the bytes a string can hold without a second look:
// printable ASCII other than the quote and the backslash.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (p *jsonParser) skipSpace() {
	// Most calls find no space at all (sonde and the C agent send none):
	// one comparison, inlined, before the loop.
	if p.pos < len(p.data) && p.data[p.pos] > ' ' {
		return
	}
	p.skipSpaceSlow()
}

func (p *jsonParser) skipSpaceSlow() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) syntaxErr(msg string) error {
	return &JSONSyntaxError{Offset: p.pos, Msg: msg}
}

// unexpected reports the byte at pos (or the end of input) in context.
func (p *jsonParser) unexpected(context string) error {
	if p.pos >= len(p.data) {
		return p.syntaxErr("unexpected end of JSON input")
	}
	return p.syntaxErr(fmt.Sprintf("invalid character %s %s", quoteByte(p.data[p.pos]), context))
}

// badByte reports the byte at pos in context; at the end of the input it
// says what encoding/json says, which reads the end as a space there.
func (p *jsonParser) badByte(context string) error {
	if p.pos >= len(p.data) {
		return p.syntaxErr("invalid character ' ' " + context)
	}
	return p.unexpected(context)
}

// quoteByte names a byte in a message as encoding/json does.
func quoteByte(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

// mismatch remembers the first value of the wrong type.
func (p *jsonParser) mismatch(what string, t reflect.Type) {
	if p.typeErr == nil {
		p.typeErr = &json.UnmarshalTypeError{Value: what, Offset: int64(p.pos), Type: t}
	}
}

// end checks that only white space follows the value.
func (p *jsonParser) end() error {
	p.skipSpace()
	if p.pos < len(p.data) {
		return p.unexpected("after top-level value")
	}
	return nil
}

// literal consumes true, false or null (the first byte matched already).
func (p *jsonParser) literal(word string) error {
	for i := 1; i < len(word); i++ {
		p.pos++
		if p.pos >= len(p.data) || p.data[p.pos] != word[i] {
			return p.badByte("in literal " + word + " (expecting " + quoteByte(word[i]) + ")")
		}
	}
	p.pos++
	return nil
}

// scanNumber consumes a number and returns its text.
func (p *jsonParser) scanNumber() ([]byte, error) {
	d, i := p.data, p.pos
	start := i
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i++; i < len(d) && isDigit(d[i]); i++ {
		}
	default:
		p.pos = i
		return nil, p.badByte("in numeric literal")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			p.pos = i
			return nil, p.badByte("after decimal point in numeric literal")
		}
		for ; i < len(d) && isDigit(d[i]); i++ {
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			p.pos = i
			return nil, p.badByte("in exponent of numeric literal")
		}
		for ; i < len(d) && isDigit(d[i]); i++ {
		}
	}
	p.pos = i
	return d[start:i], nil
}

// scanString consumes a string (pos at its opening quote) and returns the
// bytes between the quotes; raw is false when they need unquoting (escapes,
// invalid UTF-8).
func (p *jsonParser) scanString() (body []byte, raw bool, err error) {
	body, raw, _, err = p.scanStringASCII()
	return body, raw, err
}

// scanStringASCII is scanString, also telling whether the body is all
// ASCII (when raw).
func (p *jsonParser) scanStringASCII() (body []byte, raw, ascii bool, err error) {
	d := p.data
	i := p.pos + 1
	start := i
	raw = true
	ascii = true
	for {
		for i < len(d) && plainString[d[i]] {
			i++
		}
		if i >= len(d) {
			p.pos = i
			return nil, false, false, p.unexpected("")
		}
		switch c := d[i]; {
		case c == '"':
			p.pos = i + 1
			body = d[start:i]
			if !ascii && raw && !utf8.Valid(body) {
				raw = false
			}
			return body, raw, ascii, nil
		case c == '\\':
			raw = false
			i++
			if i >= len(d) {
				p.pos = i
				return nil, false, false, p.badByte("in string escape code")
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(d) || !isHex(d[i]) {
						p.pos = i
						return nil, false, false, p.badByte("in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				p.pos = i
				return nil, false, false, p.badByte("in string escape code")
			}
		case c < 0x20:
			p.pos = i
			return nil, false, false, p.unexpected("in string literal")
		default: // non-ASCII: checked once at the end
			ascii = false
			i++
		}
	}
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func hexVal(c byte) rune {
	switch {
	case isDigit(c):
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	}
	return rune(c - 'A' + 10)
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		if !isHex(c) {
			return -1
		}
		r = r<<4 | hexVal(c)
	}
	return r
}

// appendUnquoted appends the text of a scanned string body (escapes
// resolved, invalid UTF-8 and unpaired surrogates as U+FFFD).
func appendUnquoted(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			switch e := s[i+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := getu4(s[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					if r2 := utf16.DecodeRune(r, getu4(s[i:])); r2 != utf8.RuneError {
						dst = utf8.AppendRune(dst, r2)
						i += 6
						continue
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // " \ /
				dst = append(dst, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// stringValue consumes a string and returns it unquoted.
func (p *jsonParser) stringValue() (string, error) {
	body, raw, err := p.scanString()
	if err != nil {
		return "", err
	}
	if raw {
		return string(body), nil
	}
	return string(appendUnquoted(make([]byte, 0, len(body)+8), body)), nil
}

// key consumes an object key and the colon after it. The bytes returned
// are valid until the next call.
func (p *jsonParser) key() ([]byte, error) {
	k, _, err := p.keyASCII()
	return k, err
}

// keyASCII is key, also telling whether the key is all ASCII (struct
// fields are matched faster then).
func (p *jsonParser) keyASCII() (k []byte, ascii bool, err error) {
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != '"' {
		return nil, false, p.unexpected("looking for beginning of object key string")
	}
	body, raw, ascii, err := p.scanStringASCII()
	if err != nil {
		return nil, false, err
	}
	if !raw {
		p.scratch = appendUnquoted(p.scratch[:0], body)
		body = p.scratch
		ascii = isASCII(string(body))
	}
	if p.pos < len(p.data) && p.data[p.pos] == ':' { // no space: most keys
		p.pos++
		return body, ascii, nil
	}
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != ':' {
		return nil, false, p.unexpected("after object key")
	}
	p.pos++
	return body, ascii, nil
}

// open consumes '[' or '{', counting the depth.
func (p *jsonParser) open() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.syntaxErr("invalid character " + quoteByte(p.data[p.pos]) + " exceeded max depth")
	}
	p.pos++
	return nil
}

// more is called after '[' or '{' (first) and after each element or
// member; it reports whether another one follows and consumes the comma or
// the closing bracket.
func (p *jsonParser) more(first bool, closing byte) (bool, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return false, p.unexpected("")
	}
	c := p.data[p.pos]
	if c == closing {
		p.pos++
		p.depth--
		return false, nil
	}
	if first {
		return true, nil
	}
	if c == ',' {
		p.pos++
		return true, nil
	}
	if closing == ']' {
		return false, p.unexpected("after array element")
	}
	return false, p.unexpected("after object key:value pair")
}

// skipValue consumes any value, checking its syntax.
func (p *jsonParser) skipValue() error {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return p.unexpected("")
	}
	switch c := p.data[p.pos]; c {
	case '"':
		_, _, err := p.scanString()
		return err
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	case '[', '{':
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		if err := p.open(); err != nil {
			return err
		}
		for first := true; ; first = false {
			ok, err := p.more(first, closing)
			if err != nil || !ok {
				return err
			}
			if c == '{' {
				if _, err := p.key(); err != nil {
					return err
				}
			}
			if err := p.skipValue(); err != nil {
				return err
			}
		}
	}
	if c := p.data[p.pos]; c == '-' || isDigit(c) {
		_, err := p.scanNumber()
		return err
	}
	return p.unexpected("looking for beginning of value")
}

// anyValue consumes a value as encoding/json decodes it into an empty
// interface with UseNumber: nil, bool, string, json.Number, []any or
// map[string]any.
func (p *jsonParser) anyValue() (any, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.unexpected("")
	}
	switch c := p.data[p.pos]; c {
	case '"':
		return p.stringValue()
	case 't':
		return true, p.literal("true")
	case 'f':
		return false, p.literal("false")
	case 'n':
		return nil, p.literal("null")
	case '[':
		if err := p.open(); err != nil {
			return nil, err
		}
		l := make([]any, 0)
		for first := true; ; first = false {
			ok, err := p.more(first, ']')
			if err != nil || !ok {
				return l, err
			}
			v, err := p.anyValue()
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
	case '{':
		return p.objectValue()
	}
	if c := p.data[p.pos]; c == '-' || isDigit(c) {
		n, err := p.scanNumber()
		return json.Number(n), err
	}
	return nil, p.unexpected("looking for beginning of value")
}

// objectValue consumes an object (pos at '{') into a new map.
func (p *jsonParser) objectValue() (map[string]any, error) {
	m := map[string]any{}
	return m, p.objectInto(m)
}

// objectInto consumes an object (pos at '{'), adding its members to m.
func (p *jsonParser) objectInto(m map[string]any) error {
	if err := p.open(); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := p.more(first, '}')
		if err != nil || !ok {
			return err
		}
		k, err := p.key()
		if err != nil {
			return err
		}
		key := string(k)
		v, err := p.anyValue()
		if err != nil {
			return err
		}
		m[key] = v
	}
}

// validJSON checks that data is one JSON value with optional white space
// around it.
func validJSON(data []byte) error {
	p := jsonParser{data: data}
	if err := p.skipValue(); err != nil {
		return err
	}
	return p.end()
}
