package tcf

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ArgError reports a command argument that is missing, surplus, malformed
// or of the wrong type. Index is 1-based; 0 means the argument count.
type ArgError struct {
	Index int
	Want  string // what the handler expected, e.g. "unsigned integer"
	Got   string // a short excerpt of what came, or a count
	Code  int    // CodeProtocol, CodeJSONSyntax or CodeBase64
	Err   error  // the decoder's error, if any
}

func (e *ArgError) Error() string {
	if e.Index == 0 {
		return fmt.Sprintf("wrong number of arguments: want %s, got %s", e.Want, e.Got)
	}
	s := fmt.Sprintf("argument %d: want %s, got %s", e.Index, e.Want, e.Got)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ArgError) Unwrap() error { return e.Err }
func (e *ArgError) TCFCode() int  { return e.Code }

// Args decodes a command's arguments in order. Each getter consumes one
// argument; the first problem is remembered and later getters return zero
// values, so a handler reads every argument and checks once with End:
//
//	a := c.Args()
//	id, addr, size := a.String(), a.Uint64(), a.Int()
//	if err := a.End(); err != nil { ... reply with err ... }
//
// Numbers are decoded exactly from their JSON text (never through float64).
// Getters copy what they return, so values outlive the handler.
type Args struct {
	fields []Field
	next   int
	err    error
	strs   *stringCache // where String finds strings it decoded before, if set
}

// NewArgs returns a decoder over fields (for tests and for the client, which
// decodes result fields the same way).
func NewArgs(fields []Field) *Args { return &Args{fields: fields} }

// Len is the number of arguments the peer sent.
func (a *Args) Len() int { return len(a.fields) }

// Remaining is the number of arguments not consumed yet (for optional
// trailing arguments).
func (a *Args) Remaining() int { return len(a.fields) - a.next }

// Err returns the first decoding error so far.
func (a *Args) Err() error { return a.err }

// End checks that every argument was consumed and returns the first error.
func (a *Args) End() error {
	if a.err == nil && a.next < len(a.fields) {
		a.err = &ArgError{Want: strconv.Itoa(a.next), Got: strconv.Itoa(len(a.fields)), Code: CodeProtocol}
	}
	return a.err
}

// IsNull reports whether the next argument is null or empty (without
// consuming it). A missing argument is not null.
func (a *Args) IsNull() bool {
	return a.err == nil && a.next < len(a.fields) && a.fields[a.next].IsNull()
}

func (a *Args) take(want string) (Field, bool) {
	if a.err != nil {
		return Field{}, false
	}
	if a.next >= len(a.fields) {
		a.err = &ArgError{Want: "at least " + strconv.Itoa(a.next+1), Got: strconv.Itoa(len(a.fields)), Code: CodeProtocol}
		return Field{}, false
	}
	f := a.fields[a.next]
	a.next++
	return f, true
}

func (a *Args) fail(f Field, want string, code int, err error) {
	if a.err == nil {
		a.err = &ArgError{Index: a.next, Want: want, Got: excerpt(f), Code: code, Err: err}
	}
}

func excerpt(f Field) string {
	if f.Binary {
		return fmt.Sprintf("%d bytes of binary data", len(f.Data))
	}
	d := trimSpace(f.Data)
	if len(d) == 0 {
		return "null"
	}
	if len(d) > 40 {
		return strconv.Quote(string(d[:40])) + "..."
	}
	return strconv.Quote(string(d))
}

// String decodes a JSON string; null gives "".
func (a *Args) String() string {
	f, ok := a.take("string")
	if !ok || f.IsNull() {
		return ""
	}
	cache := a.strs != nil && !f.Binary // binary data is no string, whatever its bytes
	if cache {
		if s, ok := a.strs.find(f.Data); ok {
			return s
		}
	}
	s, err := decodeString(f)
	if err != nil {
		a.fail(f, "string", codeFor(err), err)
		return s
	}
	if cache {
		a.strs.add(f.Data, s)
	}
	return s
}

// stringCache remembers the last few string arguments a channel's commands
// decoded: a client names the same context in command after command (114
// of a stack round's 229 name the thread), and a string found here is not
// allocated again. Strings are immutable, so handlers may keep what they
// get. Only strings whose JSON text is the string in quotes are kept.
type stringCache struct {
	val  [8]string
	next int
}

func (c *stringCache) find(text []byte) (string, bool) {
	if len(text) < 2 || text[0] != '"' || text[len(text)-1] != '"' {
		return "", false
	}
	inner := text[1 : len(text)-1]
	for _, v := range c.val {
		if len(v) == len(inner) && v == string(inner) {
			return v, true
		}
	}
	return "", false
}

// add remembers val if text is val in quotes, and short: a long string is
// rarely repeated, and the cache must not keep much memory alive.
func (c *stringCache) add(text []byte, val string) {
	if len(val) > 64 || len(text) != len(val)+2 || string(text[1:len(text)-1]) != val {
		return
	}
	c.val[c.next] = val
	c.next = (c.next + 1) % len(c.val)
}

func decodeString(f Field) (string, error) {
	if f.Binary {
		return "", errors.New("binary data where a string belongs")
	}
	d := trimSpace(f.Data)
	if len(d) >= 2 && d[0] == '"' && d[len(d)-1] == '"' {
		// The common case: printable ASCII without escapes, taken as is.
		inner := d[1 : len(d)-1]
		i := 0
		for i < len(inner) && plainString[inner[i]] {
			i++
		}
		if i == len(inner) || (bytes.IndexByte(inner[i:], '\\') < 0 && bytes.IndexByte(inner[i:], '"') < 0 &&
			utf8.Valid(inner[i:]) && !hasControl(inner[i:])) {
			return string(inner), nil
		}
	}
	var s string
	if err := decodeJSON(d, &s); err != nil {
		return "", err
	}
	return s, nil
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// codeFor picks the report code for a decoding error: JSON syntax errors
// are CodeJSONSyntax, type mismatches CodeProtocol.
func codeFor(err error) int {
	var syn *JSONSyntaxError
	var stdSyn *json.SyntaxError
	if errors.As(err, &syn) || errors.As(err, &stdSyn) {
		return CodeJSONSyntax
	}
	return CodeProtocol
}

// Uint64 decodes an exact unsigned 64-bit integer (0 .. 2^64-1).
func (a *Args) Uint64() uint64 {
	f, ok := a.take("unsigned integer")
	if !ok {
		return 0
	}
	v, err := parseUint(f)
	if err != nil {
		a.fail(f, "unsigned integer", CodeProtocol, err)
	}
	return v
}

// Int64 decodes an exact signed 64-bit integer.
func (a *Args) Int64() int64 {
	f, ok := a.take("integer")
	if !ok {
		return 0
	}
	v, err := parseInt(f, 64)
	if err != nil {
		a.fail(f, "integer", CodeProtocol, err)
	}
	return v
}

// Int decodes an integer that fits in 32 bits (counts, modes, sizes given
// as plain numbers by clients).
func (a *Args) Int() int {
	f, ok := a.take("integer")
	if !ok {
		return 0
	}
	v, err := parseInt(f, 32)
	if err != nil {
		a.fail(f, "32-bit integer", CodeProtocol, err)
	}
	return int(v)
}

var (
	errNotObject  = errors.New("not a JSON object")
	errNotInteger = errors.New("not an integer")
	errOutOfRange = errors.New("out of range")
)

// numErr turns strconv's errors into short ones for error reports.
func numErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return errOutOfRange
	}
	return errNotInteger
}

func parseUint(f Field) (uint64, error) {
	if f.Binary {
		return 0, errNotInteger
	}
	d := trimSpace(f.Data)
	if len(d) == 0 || d[0] < '0' || d[0] > '9' || (d[0] == '0' && len(d) > 1) {
		return 0, errNotInteger
	}
	// strconv.ParseUint's rules (an overflow is reported where it happens,
	// a bad digit where it is), without its string conversion. Nineteen
	// digits cannot overflow: most numbers (addresses) need no checks.
	var v uint64
	if len(d) <= 19 {
		for _, c := range d {
			if c < '0' || c > '9' {
				return 0, errNotInteger
			}
			v = v*10 + uint64(c-'0')
		}
		return v, nil
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, errNotInteger
		}
		if v > (1<<64-1)/10 {
			return 0, errOutOfRange
		}
		v1 := v*10 + uint64(c-'0')
		if v1 < v*10 {
			return 0, errOutOfRange
		}
		v = v1
	}
	return v, nil
}

func parseInt(f Field, bits int) (int64, error) {
	if f.Binary {
		return 0, errNotInteger
	}
	d := trimSpace(f.Data)
	digits := d
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || digits[0] < '0' || digits[0] > '9' || (digits[0] == '0' && len(digits) > 1) {
		return 0, errNotInteger
	}
	v, err := strconv.ParseInt(string(d), 10, bits)
	return v, numErr(err)
}

// Bool decodes true or false; null gives false.
func (a *Args) Bool() bool {
	f, ok := a.take("boolean")
	if !ok || f.IsNull() {
		return false
	}
	switch string(trimSpace(f.Data)) {
	case "true":
		return true
	case "false":
		return false
	}
	a.fail(f, "boolean", CodeProtocol, nil)
	return false
}

// Binary decodes binary data: a base64 JSON string, or a "(N)"+raw field.
// null gives nil.
func (a *Args) Binary() []byte {
	f, ok := a.take("binary data")
	if !ok {
		return nil
	}
	if f.Binary {
		return bytes.Clone(f.Data)
	}
	if f.IsNull() {
		return nil
	}
	d := trimSpace(f.Data)
	if len(d) >= 2 && d[0] == '"' && d[len(d)-1] == '"' && bytes.IndexByte(d, '\\') < 0 {
		// Fast path: base64 has no characters JSON escapes, so the
		// string's bytes are the base64 text (the decoder rejects the rest).
		inner := d[1 : len(d)-1]
		out := make([]byte, base64.StdEncoding.DecodedLen(len(inner)))
		n, err := base64.StdEncoding.Decode(out, inner)
		if err != nil {
			a.fail(f, "base64 string", CodeBase64, err)
			return nil
		}
		return out[:n]
	}
	s, err := decodeString(f)
	if err != nil {
		a.fail(f, "base64 string", codeFor(err), err)
		return nil
	}
	out, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		a.fail(f, "base64 string", CodeBase64, err)
		return nil
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// Strings decodes an array of strings; null gives nil.
func (a *Args) Strings() []string {
	var v []string
	a.decode("array of strings", &v)
	return v
}

// Props decodes a JSON object of properties; null gives nil. Numbers inside
// stay exact (json.Number).
func (a *Args) Props() Props {
	var p Props
	a.decode("object", &p)
	return p
}

// JSON decodes the next argument into v as encoding/json would (numbers
// into json.Number where v holds interfaces; integer struct fields are
// exact; struct field names match case-insensitively). null leaves v
// unchanged. After an error v may be partly filled.
func (a *Args) JSON(v any) {
	a.decode("JSON value", v)
}

// Skip consumes the next argument, checking only that it is well-formed
// JSON (binary data is accepted as it is).
func (a *Args) Skip() {
	f, ok := a.take("JSON value")
	if !ok || f.Binary || f.IsNull() {
		return
	}
	if err := validJSON(f.Data); err != nil {
		a.fail(f, "JSON value", CodeJSONSyntax, err)
	}
}

// Ignore consumes the next argument without looking at it: for a field the
// reader has no use for (a client skipping a result field), where Skip's
// check of the JSON would only cost time.
func (a *Args) Ignore() { a.take("JSON value") }

// Raw returns a copy of the next argument's JSON text (nil for null).
func (a *Args) Raw() json.RawMessage {
	f, ok := a.take("JSON value")
	if !ok || f.IsNull() {
		return nil
	}
	if f.Binary {
		a.fail(f, "JSON value", CodeProtocol, nil)
		return nil
	}
	d := trimSpace(f.Data)
	if err := validJSON(d); err != nil {
		a.fail(f, "JSON value", CodeJSONSyntax, err)
		return nil
	}
	return bytes.Clone(d)
}

func (a *Args) decode(want string, v any) {
	f, ok := a.take(want)
	if !ok || f.IsNull() {
		return
	}
	if f.Binary {
		a.fail(f, want, CodeProtocol, nil)
		return
	}
	if err := decodeJSON(f.Data, v); err != nil {
		a.fail(f, want, codeFor(err), err)
	}
}

// Props is a JSON object of TCF properties (context properties, breakpoint
// properties, launch parameters...). Numbers are json.Number, so they keep
// their exact value and re-encode to the same text.
type Props map[string]any

// String returns the string property key; ok is false when it is absent or
// not a string.
func (p Props) String(key string) (s string, ok bool) {
	s, ok = p[key].(string)
	return s, ok
}

// Bool returns the boolean property key.
func (p Props) Bool(key string) (v bool, ok bool) {
	v, ok = p[key].(bool)
	return v, ok
}

// Uint64 returns the property key as an exact unsigned integer; ok is false
// when it is absent, not a number, negative, fractional or too large.
func (p Props) Uint64(key string) (uint64, bool) {
	n, ok := p[key].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := parseUint(Field{Data: []byte(n)})
	return v, err == nil
}

// Int64 returns the property key as an exact signed integer.
func (p Props) Int64(key string) (int64, bool) {
	n, ok := p[key].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := parseInt(Field{Data: []byte(n)}, 64)
	return v, err == nil
}

// Strings returns the property key as a list of strings.
func (p Props) Strings(key string) ([]string, bool) {
	l, ok := p[key].([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(l))
	for i, x := range l {
		if out[i], ok = x.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// DecodeReport decodes an error report field. An empty field or null gives
// (nil, nil). Numbers (Code, Time, AltCode) must be exact integers.
func DecodeReport(text []byte) (*ErrorReport, error) {
	d := trimSpace(text)
	if len(d) == 0 || string(d) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := decodeJSON(d, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errNotObject
	}
	return reportFromMap(m, 0)
}

func reportFromMap(m map[string]any, depth int) (*ErrorReport, error) {
	if depth > 32 {
		return nil, errors.New("error report nested too deeply")
	}
	r := &ErrorReport{}
	p := Props(m)
	code, ok := p.Int64("Code")
	if !ok || code != int64(int32(code)) {
		return nil, errors.New("error report without an integer Code")
	}
	r.Code = int(code)
	for k, v := range m {
		switch k {
		case "Code":
		case "Time":
			if r.Time, ok = p.Int64(k); !ok {
				return nil, errors.New("error report Time is not an integer")
			}
		case "Service":
			r.Service, _ = v.(string)
		case "Format":
			r.Format, _ = v.(string)
		case "Params":
			r.Params, _ = v.([]any)
		case "Severity":
			s, _ := p.Int64(k)
			r.Severity = int(s)
		case "AltCode":
			c, _ := p.Int64(k)
			r.AltCode = int(c)
		case "AltOrg":
			r.AltOrg, _ = v.(string)
		case "CausedBy":
			if cm, ok := v.(map[string]any); ok {
				cb, err := reportFromMap(cm, depth+1)
				if err != nil {
					return nil, err
				}
				r.CausedBy = cb
			}
		default:
			if r.Extra == nil {
				r.Extra = map[string]any{}
			}
			r.Extra[k] = v
		}
	}
	return r, nil
}

// Report decodes the next argument as an error report (null gives nil).
func (a *Args) Report() *ErrorReport {
	f, ok := a.take("error report")
	if !ok || f.IsNull() {
		return nil
	}
	if f.Binary {
		a.fail(f, "error report", CodeProtocol, nil)
		return nil
	}
	r, err := DecodeReport(f.Data)
	if err != nil {
		a.fail(f, "error report", codeFor(err), err)
	}
	return r
}
