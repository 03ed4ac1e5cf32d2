package tcf

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// Escape sequences of the TCF stream encoding. Inside a message, fields end
// with a 0x00 byte; the byte 0x03 introduces a two-byte sequence.
const (
	esc          = 0x03
	escLiteral   = 0x00 // 03 00: a literal 0x03 data byte
	escEOM       = 0x01 // 03 01: end of message
	escEOS       = 0x02 // 03 02: end of stream (an error report follows)
	escZeroCopy  = 0x03 // 03 03 <varint n>: n raw bytes follow
	maxVarintLen = 16   // non-minimal (fixed-width) encodings are legal; 16 is generous
)

// DefaultMaxMessageSize bounds one decoded message (after unescaping). Large
// enough for a base64 Memory.set of several MiB, small enough that a peer
// cannot make the agent allocate without bound.
const DefaultMaxMessageSize = 32 << 20

// Field is one NUL-terminated field of a message: a JSON text (empty = null),
// or, when Binary is set, the raw bytes of a "(N)"+raw binary argument.
type Field struct {
	Data   []byte
	Binary bool
}

// IsNull reports whether the field is empty or the JSON literal null.
func (f Field) IsNull() bool {
	if f.Binary {
		return false
	}
	d := trimSpace(f.Data)
	return len(d) == 0 || string(d) == "null"
}

// Message is one decoded TCF message. The Message and its byte slices
// belong to the Reader and are valid only until the next ReadMessage call.
type Message struct {
	Kind    byte    // 'C', 'R', 'P', 'N', 'E' or 'F'
	Token   []byte  // C, R, P, N
	Service []byte  // C, E
	Name    []byte  // command name (C) or event name (E)
	Fields  []Field // arguments (C, E), result fields (R, P), level (F)
}

// FramingError reports input that breaks the stream encoding; the channel
// cannot find the next message boundary and must be closed. Offset counts
// bytes of input from the start of the stream.
type FramingError struct {
	Offset int64
	Code   int // CodeProtocol or CodeBufferOverflow
	Reason string
}

func (e *FramingError) Error() string {
	return fmt.Sprintf("tcf: stream byte %d: %s", e.Offset, e.Reason)
}

// TCFCode gives the code of the error report sent before closing.
func (e *FramingError) TCFCode() int { return e.Code }

// MessageError reports a message whose framing is intact but whose layout is
// wrong (unknown kind, missing fields). The reader stays usable.
type MessageError struct {
	Offset int64 // stream offset of the message's end
	Reason string
}

func (e *MessageError) Error() string {
	return fmt.Sprintf("tcf: message ending at stream byte %d: %s", e.Offset, e.Reason)
}

func (e *MessageError) TCFCode() int { return CodeProtocol }

// EOSError is returned when the peer ended the stream with 03 02; Report
// holds the error report it sent, if any.
type EOSError struct {
	Report *ErrorReport
}

func (e *EOSError) Error() string {
	if e.Report == nil {
		return "tcf: peer ended the stream"
	}
	return "tcf: peer ended the stream: " + e.Report.Message()
}

// Reader decodes TCF messages from a byte stream. It accepts ZeroCopy blocks
// (03 03 <varint>) anywhere, with minimal or padded varints, and bounds every
// message to MaxMessageSize bytes.
type Reader struct {
	rd     io.Reader
	buf    []byte
	r, w   int
	off    int64 // stream offset of buf[r]
	body   []byte
	fields []Field
	msg    Message // reused: ReadMessage returns &r.msg
	max    int
	err    error // sticky read or framing error
	// budget, when set, is charged for the body's capacity as it grows
	// (charged says how much), so that the input all channels buffer is
	// bounded together (see Budget).
	budget  *Budget
	charged int
	peak    int // the most charged at once
}

// NewReader returns a Reader on rd; maxMessage <= 0 means DefaultMaxMessageSize.
func NewReader(rd io.Reader, maxMessage int) *Reader {
	if maxMessage <= 0 {
		maxMessage = DefaultMaxMessageSize
	}
	return &Reader{rd: rd, buf: make([]byte, 64<<10), max: maxMessage}
}

// SetMaxMessage changes the bound on one message (<= 0: the default). The
// agent keeps it small until the peer said Hello.
func (r *Reader) SetMaxMessage(n int) {
	if n <= 0 {
		n = DefaultMaxMessageSize
	}
	r.max = n
}

// SetBudget makes the reader charge its message buffer to b: a message
// that would take the budget over its limit is a framing error
// (CodeBufferOverflow) and the channel closes.
func (r *Reader) SetBudget(b *Budget) { r.budget = b }

// Peak is the most the reader charged to its budget at once.
func (r *Reader) Peak() int { return r.peak }

// Release gives back what the reader charged to its budget and drops its
// message buffer. The reader must not be used afterwards.
func (r *Reader) Release() {
	r.dropBody()
	r.buf = nil
}

// dropBody forgets the message buffer and refunds its charge.
func (r *Reader) dropBody() {
	r.body = nil
	if r.budget != nil && r.charged > 0 {
		r.budget.Give(r.charged)
	}
	r.charged = 0
}

// reserve makes room for a body of need bytes. The body grows by doubling
// what arrived, never by what a peer announced, so a peer makes the reader
// allocate at most about twice what it actually sent.
func (r *Reader) reserve(need int) error {
	if need <= cap(r.body) {
		return nil
	}
	if need > r.max {
		return r.framingErr(CodeBufferOverflow, "message longer than %d bytes", r.max)
	}
	want := min(max(need, 2*cap(r.body), 512), r.max)
	if r.budget != nil {
		extra := want - r.charged
		if extra > 0 && !r.budget.Take(extra) {
			return r.framingErr(CodeBufferOverflow,
				"agent-wide input buffers full (%d bytes): message of %d bytes so far not accepted", r.budget.Limit(), need)
		}
		if extra > 0 {
			r.charged = want
			r.peak = max(r.peak, want)
		}
	}
	nb := make([]byte, len(r.body), want)
	copy(nb, r.body)
	r.body = nb
	return nil
}

// Detach hands the memory of the message last returned to the caller: it
// stays valid after the next ReadMessage (the reader starts new buffers).
// For large messages this saves copying them.
func (r *Reader) Detach() {
	r.dropBody()
	r.fields = nil
	r.msg = Message{}
}

// Buffered reports whether unread input is already buffered, i.e. whether
// the next ReadMessage may complete without blocking.
func (r *Reader) Buffered() bool { return r.r < r.w }

// fill reads more input; it returns an error only when nothing was read.
func (r *Reader) fill() error {
	if r.err != nil {
		return r.err
	}
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
	if r.w == len(r.buf) {
		copy(r.buf, r.buf[r.r:r.w])
		r.w -= r.r
		r.r = 0
	}
	for i := 0; i < 100; i++ {
		n, err := r.rd.Read(r.buf[r.w:])
		r.w += n
		if n > 0 {
			return nil
		}
		if err != nil {
			r.err = err
			return err
		}
	}
	r.err = io.ErrNoProgress
	return r.err
}

func (r *Reader) readByte() (byte, error) {
	if r.r == r.w {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	b := r.buf[r.r]
	r.r++
	r.off++
	return b, nil
}

func (r *Reader) framingErr(code int, format string, args ...any) error {
	r.err = &FramingError{Offset: r.off, Code: code, Reason: fmt.Sprintf(format, args...)}
	return r.err
}

func (r *Reader) appendBody(p []byte) error {
	if len(r.body)+len(p) > r.max {
		return r.framingErr(CodeBufferOverflow, "message longer than %d bytes", r.max)
	}
	if err := r.reserve(len(r.body) + len(p)); err != nil {
		return err
	}
	r.body = append(r.body, p...)
	return nil
}

// truncated turns an end of input inside a message into a framing error.
func (r *Reader) truncated(err error) error {
	if err == io.EOF {
		return r.framingErr(CodeEOF, "stream ended inside a message (%d bytes without end-of-message)", len(r.body))
	}
	return err
}

// ReadMessage returns the next message. At a clean end of input between
// messages it returns io.EOF; after the peer's end-of-stream marker it
// returns an *EOSError; a *MessageError leaves the reader usable and comes
// with the message as far as it was decoded (Kind, and for a command its
// Token, Service and Name when those were intact); any other error
// (including *FramingError) is final.
func (r *Reader) ReadMessage() (*Message, error) {
	if err := r.readBody(); err != nil {
		return nil, err
	}
	var reason string
	r.msg, reason = splitMessage(r.body, r.fields[:0])
	r.fields = r.msg.Fields
	if reason != "" {
		// msg keeps what was decoded of the header (a command's token), so
		// the channel can still answer it.
		return &r.msg, &MessageError{Offset: r.off, Reason: reason}
	}
	return &r.msg, nil
}

// readBody reads and unescapes one message into r.body.
func (r *Reader) readBody() error {
	if r.err != nil {
		return r.err
	}
	if cap(r.body) > keepBody {
		r.dropBody() // do not keep a huge buffer for one big message
	}
	r.body = r.body[:0]
	eos := false
	zc := 0 // bytes left in the current ZeroCopy block
	for {
		if r.r == r.w {
			if zc >= directReadMin {
				// Nothing buffered and a large block to come: read it
				// straight into the body, one copy less. The body grows
				// with what arrived (reserve doubles it), not to the
				// announced length: an announcement costs nothing to send.
				if err := r.reserve(len(r.body) + min(zc, max(len(r.body), directReadMin))); err != nil {
					return err
				}
				room := min(zc, cap(r.body)-len(r.body))
				n, err := r.rd.Read(r.body[len(r.body) : len(r.body)+room])
				if n > 0 {
					r.body = r.body[:len(r.body)+n]
					r.off += int64(n)
					zc -= n
					continue
				}
				if err != nil {
					r.err = err
					return r.truncated(err)
				}
				// Nothing read and no error: fill bounds such reads.
			}
			if err := r.fill(); err != nil {
				if err == io.EOF && len(r.body) == 0 && zc == 0 && !eos {
					return io.EOF
				}
				if eos {
					return &EOSError{Report: parseReport(r.body)}
				}
				return r.truncated(err)
			}
		}
		if zc > 0 {
			n := min(zc, r.w-r.r)
			if err := r.appendBody(r.buf[r.r : r.r+n]); err != nil {
				return err
			}
			r.r += n
			r.off += int64(n)
			zc -= n
			continue
		}
		avail := r.buf[r.r:r.w]
		i := bytes.IndexByte(avail, esc)
		if i < 0 {
			if err := r.appendBody(avail); err != nil {
				return err
			}
			r.off += int64(len(avail))
			r.r = r.w
			continue
		}
		if err := r.appendBody(avail[:i]); err != nil {
			return err
		}
		r.r += i + 1
		r.off += int64(i + 1)
		code, err := r.readByte()
		if err != nil {
			return r.truncated(err)
		}
		switch code {
		case escLiteral:
			if err := r.appendBody([]byte{esc}); err != nil {
				return err
			}
		case escEOM:
			if eos {
				r.err = &EOSError{Report: parseReport(r.body)}
				return r.err
			}
			return nil
		case escEOS:
			// The peer is closing: what follows is an error report, 00, EOM.
			eos = true
			r.body = r.body[:0]
		case escZeroCopy:
			n, err := r.readVarint()
			if err != nil {
				return err
			}
			zc = n // the body grows as the block's bytes arrive
		default:
			return r.framingErr(CodeProtocol, "invalid escape sequence 03 %02x", code)
		}
	}
}

// keepBody is the largest message buffer a reader keeps for the next
// message.
const keepBody = 4 << 20

// directReadMin is the size of a ZeroCopy block (rest) from which the reader
// reads it into the message body directly rather than through its buffer.
const directReadMin = 16 << 10

// readVarint reads the length of a ZeroCopy block: little-endian base 128,
// high bit = more. Padded encodings (e.g. a8 00 for 40) are accepted.
func (r *Reader) readVarint() (int, error) {
	var v uint64
	for i := 0; ; i++ {
		if i == maxVarintLen {
			return 0, r.framingErr(CodeProtocol, "ZeroCopy length longer than %d bytes", maxVarintLen)
		}
		b, err := r.readByte()
		if err != nil {
			return 0, r.truncated(err)
		}
		payload := uint64(b & 0x7f)
		shift := uint(7 * i)
		if payload != 0 {
			if shift >= 63 || payload > (uint64(r.max)>>shift) {
				return 0, r.framingErr(CodeBufferOverflow, "ZeroCopy block length beyond the %d-byte message limit", r.max)
			}
			v |= payload << shift
		}
		if b&0x80 == 0 {
			break
		}
	}
	if int64(len(r.body))+int64(v) > int64(r.max) {
		return 0, r.framingErr(CodeBufferOverflow, "ZeroCopy block of %d bytes exceeds the %d-byte message limit", v, r.max)
	}
	return int(v), nil
}

// splitMessage cuts an unescaped message into its fields. It returns a
// reason when the layout is wrong.
func splitMessage(body []byte, fields []Field) (Message, string) {
	var m Message
	kind, rest, ok := cutField(body)
	if !ok || len(kind) != 1 {
		return m, "message does not start with a one-letter kind field"
	}
	m.Kind = kind[0]
	switch m.Kind {
	case 'C':
		var tok []byte
		if tok, rest, ok = cutField(rest); !ok {
			return m, "command without token"
		}
		if m.Service, rest, ok = cutField(rest); !ok {
			return m, "command without service name"
		}
		if m.Name, rest, ok = cutField(rest); !ok {
			return m, "command without command name"
		}
		m.Token = tok // only a complete header makes the command answerable
	case 'R', 'P', 'N':
		if m.Token, rest, ok = cutField(rest); !ok {
			return m, "reply without token"
		}
	case 'E':
		if m.Service, rest, ok = cutField(rest); !ok {
			return m, "event without service name"
		}
		if m.Name, rest, ok = cutField(rest); !ok {
			return m, "event without event name"
		}
	case 'F':
	default:
		return m, fmt.Sprintf("unknown message kind %q", m.Kind)
	}
	var reason string
	m.Fields, reason = splitFields(rest, fields)
	return m, reason
}

func cutField(b []byte) (field, rest []byte, ok bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, b, false
	}
	return b[:i], b[i+1:], true
}

// splitFields splits the argument part of a message: JSON texts each ended
// by 00, or "(N)" followed by N raw bytes and 00.
func splitFields(b []byte, fields []Field) ([]Field, string) {
	for len(b) > 0 {
		if b[0] == '(' {
			end := bytes.IndexByte(b, ')')
			if end < 0 || end > 21 {
				return fields, fmt.Sprintf("field %d: binary length prefix without ')'", len(fields)+1)
			}
			n, err := strconv.ParseUint(string(b[1:end]), 10, 63)
			if err != nil {
				return fields, fmt.Sprintf("field %d: bad binary length %q", len(fields)+1, b[1:end])
			}
			data := b[end+1:]
			if uint64(len(data)) < n+1 || data[n] != 0 {
				return fields, fmt.Sprintf("field %d: binary data of %d bytes not followed by a field end", len(fields)+1, n)
			}
			fields = append(fields, Field{Data: data[:n], Binary: true})
			b = data[n+1:]
			continue
		}
		f, rest, ok := cutField(b)
		if !ok {
			return fields, fmt.Sprintf("field %d is not terminated by 00", len(fields)+1)
		}
		fields = append(fields, Field{Data: f})
		b = rest
	}
	return fields, ""
}

// parseReport decodes the error report that follows an EOS marker.
func parseReport(body []byte) *ErrorReport {
	f, _, _ := cutField(body)
	if len(f) == 0 {
		f = body
	}
	rep, err := DecodeReport(f)
	if err != nil {
		return nil
	}
	return rep
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
