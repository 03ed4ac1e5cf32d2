package tcf_test

import (
	"bytes"
	"io"
	"math/rand"
	"testing"
	"testing/iotest"

	"github.com/sondedbg/sonde/tcf"
)

// chunkReader returns its input in pieces of random sizes, as a socket does.
type chunkReader struct {
	data []byte
	rnd  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rnd.Intn(70000))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestReaderLargeZeroCopy: ZeroCopy blocks of every size around the reader's
// buffer and its direct-read threshold arrive intact however the stream is
// cut, with messages before and after them.
func TestReaderLargeZeroCopy(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	for _, size := range []int{0, 1, 16<<10 - 1, 16 << 10, 64<<10 - 3, 64 << 10, 64<<10 + 1, 200000, 1 << 20} {
		data := make([]byte, size)
		rnd.Read(data)
		var stream []byte
		for _, d := range [][]byte{[]byte("x"), data, []byte("yz")} {
			b := tcf.Builder{ZeroCopy: true}
			b.Start(stream)
			b.Event("Test", "blob").Binary(d).End()
			var err error
			if stream, err = b.Bytes(); err != nil {
				t.Fatal(err)
			}
		}
		for name, src := range map[string]io.Reader{
			"chunks":   &chunkReader{data: bytes.Clone(stream), rnd: rnd},
			"one byte": iotest.OneByteReader(bytes.NewReader(stream)),
			"half":     iotest.HalfReader(bytes.NewReader(stream)),
		} {
			if size >= 200000 && name == "one byte" {
				continue // 10^6 reads: the chunked reader covers these sizes
			}
			rd := tcf.NewReader(src, 0)
			for i, want := range [][]byte{[]byte("x"), data, []byte("yz")} {
				m, err := rd.ReadMessage()
				if err != nil {
					t.Fatalf("size %d, %s, message %d: %v", size, name, i, err)
				}
				a := tcf.NewArgs(m.Fields)
				got := a.Binary()
				if err := a.End(); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("size %d, %s, message %d: %d bytes (%v), want %d", size, name, i, len(got), err, len(want))
				}
			}
			if _, err := rd.ReadMessage(); err != io.EOF {
				t.Fatalf("size %d, %s: after the messages: %v", size, name, err)
			}
		}
		if size > 100 {
			// Cut inside the big block: an error, not a hang or a short body.
			cut := stream[:len(stream)-len("yz")-size/2]
			rd := tcf.NewReader(&chunkReader{data: cut, rnd: rnd}, 0)
			if _, err := rd.ReadMessage(); err != nil {
				t.Fatalf("size %d: first message: %v", size, err)
			}
			if m, err := rd.ReadMessage(); err == nil {
				t.Fatalf("size %d: a truncated block gave a message of %d fields", size, len(m.Fields))
			}
		}
	}
}
