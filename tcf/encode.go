package tcf

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/sondedbg/sonde/internal/jsonstr"
)

// Builder assembles one outgoing TCF message: a header (kind and its fixed
// fields), then fields appended in order, then End. Field values are
// encoded as JSON without HTML escaping; control characters become \u00XX,
// like the C agent writes them.
//
// When ZeroCopy is set (both peers listed "ZeroCopy" in their Hello),
// Binary fields are written as "(N)" plus a raw block instead of base64.
type Builder struct {
	ZeroCopy bool
	buf      []byte
	err      error
	pool     *[]byte // set when buf came from the package's buffer pool
}

// Bytes returns the encoded message (valid after End) and the first
// encoding error, if any.
func (b *Builder) Bytes() ([]byte, error) { return b.buf, b.err }

// Start makes the builder append the next message to dst (whose bytes are
// kept); Bytes then returns dst with the message appended.
func (b *Builder) Start(dst []byte) { b.buf, b.err = dst, nil }

// Reset empties the builder, keeping its buffer.
func (b *Builder) Reset() { b.buf, b.err = b.buf[:0], nil }

// Command starts a command message.
func (b *Builder) Command(token, service, name string) *Builder {
	b.buf = append(b.buf, 'C', 0)
	b.buf = appendEscapedString(b.buf, token)
	return b.commandName(service, name)
}

// CommandNumbered is Command with the token n in decimal, for clients that
// number their commands (a number needs no escaping, and no string made).
func (b *Builder) CommandNumbered(n uint64, service, name string) *Builder {
	b.buf = append(b.buf, 'C', 0)
	b.buf = strconv.AppendUint(b.buf, n, 10)
	return b.commandName(service, name)
}

// commandName ends a command's token and appends its service and name.
func (b *Builder) commandName(service, name string) *Builder {
	b.buf = append(b.buf, 0)
	b.buf = appendEscapedString(b.buf, service)
	b.buf = append(b.buf, 0)
	b.buf = appendEscapedString(b.buf, name)
	b.buf = append(b.buf, 0)
	return b
}

// Result starts an R message (kind 'R'), a progress message ('P') or a
// not-recognized message ('N') for token.
func (b *Builder) Result(kind byte, token []byte) *Builder {
	b.buf = append(b.buf, kind, 0)
	b.buf = appendEscaped(b.buf, token)
	b.buf = append(b.buf, 0)
	return b
}

// Event starts an event message.
func (b *Builder) Event(service, name string) *Builder {
	b.buf = append(b.buf, 'E', 0)
	b.buf = appendEscapedString(b.buf, service)
	b.buf = append(b.buf, 0)
	b.buf = appendEscapedString(b.buf, name)
	b.buf = append(b.buf, 0)
	return b
}

// End appends the end-of-message marker.
func (b *Builder) End() *Builder {
	b.buf = append(b.buf, esc, escEOM)
	return b
}

// Empty appends an empty field, which peers read as null (the C agent's
// "no error").
func (b *Builder) Empty() *Builder {
	b.buf = append(b.buf, 0)
	return b
}

// Null appends the JSON literal null.
func (b *Builder) Null() *Builder {
	b.buf = append(b.buf, "null\x00"...)
	return b
}

// String appends a JSON string.
func (b *Builder) String(s string) *Builder {
	b.buf = AppendJSONString(b.buf, s)
	b.buf = append(b.buf, 0)
	return b
}

// Uint64 appends an exact unsigned integer.
func (b *Builder) Uint64(v uint64) *Builder {
	b.buf = strconv.AppendUint(b.buf, v, 10)
	b.buf = append(b.buf, 0)
	return b
}

// Int64 appends an exact signed integer.
func (b *Builder) Int64(v int64) *Builder {
	b.buf = strconv.AppendInt(b.buf, v, 10)
	b.buf = append(b.buf, 0)
	return b
}

// Bool appends true or false.
func (b *Builder) Bool(v bool) *Builder {
	b.buf = strconv.AppendBool(b.buf, v)
	b.buf = append(b.buf, 0)
	return b
}

// RawJSON appends a JSON text as is (it must be valid JSON; empty = null).
func (b *Builder) RawJSON(text []byte) *Builder {
	if bytes.IndexByte(text, 0) >= 0 || bytes.IndexByte(text, esc) >= 0 {
		b.fail(fmt.Errorf("tcf: raw JSON field contains a NUL or 0x03 byte"))
		text = nil
	}
	b.buf = append(b.buf, text...)
	b.buf = append(b.buf, 0)
	return b
}

// Binary appends binary data: base64 in a JSON string, or "(N)" and a raw
// ZeroCopy block when the Builder's ZeroCopy is set. nil data is null.
func (b *Builder) Binary(data []byte) *Builder {
	if data == nil {
		return b.Null()
	}
	if b.ZeroCopy {
		b.buf = append(b.buf, '(')
		b.buf = strconv.AppendInt(b.buf, int64(len(data)), 10)
		b.grow(len(data) + 16)
		b.buf = append(b.buf, ')', esc, escZeroCopy)
		b.buf = appendVarint(b.buf, uint64(len(data)))
		b.buf = append(b.buf, data...)
		b.buf = append(b.buf, 0)
		return b
	}
	b.grow(base64.StdEncoding.EncodedLen(len(data)) + 3)
	b.buf = append(b.buf, '"')
	b.buf = base64.StdEncoding.AppendEncode(b.buf, data)
	b.buf = append(b.buf, '"', 0)
	return b
}

// Error appends an error-report field: empty for nil (as the C agent
// writes "no error"), otherwise the report's JSON. Use [Report] to make a
// report from an error.
func (b *Builder) Error(rep *ErrorReport) *Builder {
	if rep == nil {
		return b.Empty()
	}
	b.buf = appendReport(b.buf, rep)
	b.buf = append(b.buf, 0)
	return b
}

// Data appends any value as JSON. Integers keep their exact value; []byte
// becomes base64; json.RawMessage is copied verbatim.
func (b *Builder) Data(v any) *Builder {
	var err error
	b.buf, err = AppendJSON(b.buf, v)
	if err != nil {
		b.fail(err)
		b.buf = append(b.buf, "null"...)
	}
	b.buf = append(b.buf, 0)
	return b
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// appendEscaped appends p with every 0x03 written as 03 00.
func appendEscaped(dst, p []byte) []byte {
	for {
		i := bytes.IndexByte(p, esc)
		if i < 0 {
			return append(dst, p...)
		}
		dst = append(dst, p[:i+1]...)
		dst = append(dst, escLiteral)
		p = p[i+1:]
	}
}

func appendEscapedString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == esc {
			return appendEscaped(dst, []byte(s))
		}
	}
	return append(dst, s...)
}

func appendVarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// AppendJSONString appends s as a JSON string, byte for byte as
// encoding/json writes it without HTML escaping (internal/jsonstr, the
// escaper tcf shares with dap). The output never contains a NUL or 0x03
// byte, so it needs no TCF escaping.
func AppendJSONString(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }

type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoderPool = sync.Pool{New: func() any {
	e := &jsonEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// AppendJSON appends v encoded as JSON (no HTML escaping, no newline).
func AppendJSON(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if len(x) == 0 {
			return append(dst, "null"...), nil
		}
		return append(dst, x...), nil
	case *ErrorReport:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return appendReport(dst, x), nil
	}
	return appendJSONValue(dst, v)
}

// appendStdJSON appends v as encoding/json encodes it.
func appendStdJSON(dst []byte, v any) ([]byte, error) {
	e := encoderPool.Get().(*jsonEncoder)
	defer encoderPool.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return dst, fmt.Errorf("tcf: encoding %T as JSON: %w", v, err)
	}
	out := e.buf.Bytes()
	out = out[:len(out)-1] // Encode adds a newline
	return append(dst, out...), nil
}

// appendJSONValue appends v exactly as encoding/json encodes it, by hand for
// the generic shapes events and replies are built of (maps with string
// keys, in sorted order; slices; strings, integers, booleans) and through
// encoding/json for anything else. Every stop's contextSuspended carries
// such a map, and every breakpoint hit a status: encoding/json's
// reflection and key sorting were ~3 µs of a hit's 115.
func appendJSONValue(dst []byte, v any) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendJSONString(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case []string:
		// Not appendJSONArray: each string would be boxed into an any
		// (an allocation apiece) to go through appendJSONValue.
		if x == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, s := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONString(dst, s)
		}
		return append(dst, ']'), nil
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		var keyBuf [16]string
		keys := keyBuf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONString(dst, k)
			dst = append(dst, ':')
			if dst, err = appendJSONValue(dst, x[k]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		return appendJSONArray(dst, x)
	case []map[string]any:
		return appendJSONArray(dst, x)
	}
	return appendStdJSON(dst, v)
}

// appendJSONArray appends a slice's elements with appendJSONValue.
func appendJSONArray[E any](dst []byte, x []E) ([]byte, error) {
	if x == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i, e := range x {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendJSONValue(dst, e); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendReport writes a report with a fixed key order (Code, Time, Service,
// Format, Params, Severity, AltCode, AltOrg, CausedBy, then extra keys
// sorted), so replies are byte-for-byte reproducible.
func appendReport(dst []byte, r *ErrorReport) []byte {
	dst = append(dst, `{"Code":`...)
	dst = strconv.AppendInt(dst, int64(r.Code), 10)
	dst = append(dst, `,"Time":`...)
	dst = strconv.AppendInt(dst, r.Time, 10)
	if r.Service != "" {
		dst = append(dst, `,"Service":`...)
		dst = AppendJSONString(dst, r.Service)
	}
	if r.Format != "" {
		dst = append(dst, `,"Format":`...)
		dst = AppendJSONString(dst, r.Format)
	}
	if len(r.Params) > 0 {
		dst = append(dst, `,"Params":`...)
		var err error
		if dst, err = AppendJSON(dst, r.Params); err != nil {
			dst = append(dst, "null"...)
		}
	}
	if r.Severity != 0 {
		dst = append(dst, `,"Severity":`...)
		dst = strconv.AppendInt(dst, int64(r.Severity), 10)
	}
	if r.AltCode != 0 {
		dst = append(dst, `,"AltCode":`...)
		dst = strconv.AppendInt(dst, int64(r.AltCode), 10)
	}
	if r.AltOrg != "" {
		dst = append(dst, `,"AltOrg":`...)
		dst = AppendJSONString(dst, r.AltOrg)
	}
	if r.CausedBy != nil {
		dst = append(dst, `,"CausedBy":`...)
		dst = appendReport(dst, r.CausedBy)
	}
	if len(r.Extra) > 0 {
		keys := make([]string, 0, len(r.Extra))
		for k := range r.Extra {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			dst = append(dst, ',')
			dst = AppendJSONString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendJSON(dst, r.Extra[k]); err != nil {
				dst = append(dst, "null"...)
			}
		}
	}
	return append(dst, '}')
}
