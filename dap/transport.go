package dap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	godap "github.com/google/go-dap"
)

// The base protocol: a header of "Name: value" lines ended by an empty line,
// Content-Length among them, then that many bytes of JSON. go-dap's own
// reader reads a header line of any length (ReadString) and accepts only a
// lone Content-Length field, so sonde frames messages itself and uses go-dap
// for the message types.

// maxHeaderLine bounds one header line; maxHeaderLines the lines of one
// header; MaxContent the body of one message (a writeMemory of a few MiB of
// base64 fits).
const (
	maxHeaderLine  = 1024
	maxHeaderLines = 16
	MaxContent     = 16 << 20
)

// FrameError is a message that breaks the base protocol. The reader has
// skipped the bad bytes and can go on with the next header.
type FrameError struct {
	Offset int64 // stream offset where the problem was seen
	Reason string
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("dap: bad message framing at byte %d: %s", e.Offset, e.Reason)
}

// Reader reads base-protocol messages from a stream.
type Reader struct {
	r   *bufio.Reader
	off int64
}

// NewReader reads messages from r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// contentLengthKey is how the header field is searched for when
// resynchronising after garbage.
const contentLengthKey = "content-length:"

// Read returns the body of the next message. A *FrameError says the message
// was malformed and skipped; any other error ends the stream (io.EOF when
// it ended cleanly between messages).
func (r *Reader) Read() ([]byte, error) {
	length := -1
	lines := 0
	start := r.off
	for {
		line, err := r.line()
		if err != nil {
			if err == io.EOF && lines == 0 && line == "" {
				return nil, io.EOF
			}
			if errors.Is(err, errLineTooLong) {
				return nil, &FrameError{start, "header line longer than 1024 bytes"}
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if line == "" {
			if lines == 0 {
				continue // stray blank lines between messages
			}
			break
		}
		lines++
		if lines > maxHeaderLines {
			return nil, &FrameError{start, "more than 16 header lines"}
		}
		// Garbage before a header (the rest of a body whose Content-Length
		// was too short): resynchronise on the field name.
		if i := strings.Index(strings.ToLower(line), contentLengthKey); i > 0 {
			line = line[i:]
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, &FrameError{start, fmt.Sprintf("header line %q is not Name: value", clip(line))}
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, &FrameError{start, fmt.Sprintf("Content-Length %q is not a length", clip(value))}
			}
			length = n
		}
	}
	if length < 0 {
		return nil, &FrameError{start, "header has no Content-Length"}
	}
	if length > MaxContent {
		// Not skipped (a client that sent a wrong length would keep the
		// server waiting for bytes that never come): what follows is read
		// as header lines until the next Content-Length.
		return nil, &FrameError{start, fmt.Sprintf("Content-Length %d is over the limit of %d bytes", length, MaxContent)}
	}
	body := make([]byte, length)
	n, err := io.ReadFull(r.r, body)
	r.off += int64(n)
	if err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
}

var errLineTooLong = errors.New("line too long")

// line reads one header line (ended by \n, a \r before it dropped),
// bounded by maxHeaderLine; a longer line is consumed up to its end.
func (r *Reader) line() (string, error) {
	var b []byte
	for {
		c, err := r.r.ReadByte()
		if err != nil {
			return string(b), err
		}
		r.off++
		if c == '\n' {
			return strings.TrimSuffix(string(b), "\r"), nil
		}
		if len(b) >= maxHeaderLine {
			// Consume the rest of the line so the next Read starts afresh.
			for {
				c, err := r.r.ReadByte()
				if err != nil {
					return "", err
				}
				r.off++
				if c == '\n' {
					return "", errLineTooLong
				}
			}
		}
		b = append(b, c)
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Writer writes messages, one at a time, each flushed at once (a socket
// client waits for small writes: nothing is held back), numbering them.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	seq int
	buf bytes.Buffer
	err error
}

// NewWriter writes messages to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Send sets m's sequence number (through pm, m's own ProtocolMessage),
// encodes m and sends it whole with one write. Numbering and writing under
// one lock keeps the numbers in order on the wire.
func (w *Writer) Send(pm *godap.ProtocolMessage, m godap.Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.seq++
	pm.Seq = w.seq
	body, err := encodeMessage(m) // json.Marshal, by hand for the largest responses
	if err != nil {
		return err
	}
	w.buf.Reset()
	fmt.Fprintf(&w.buf, "Content-Length: %d\r\n\r\n", len(body))
	w.buf.Write(body)
	if _, err := w.w.Write(w.buf.Bytes()); err != nil {
		w.err = err
		return err
	}
	return nil
}
