package pcache

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"testing"
)

// testClient persists a fixed set of named sections and records what it
// resurrects.
type testClient struct {
	name     string
	version  uint32
	secs     map[string][]byte
	align    int
	existing []Section // what Size saw in ctx.Existing

	// set by callbacks
	offsets   map[string]int64
	got       map[string][]byte
	resurErr  error
	shortBy   int64 // Persist writes this many bytes fewer than announced
	userSeen  []any
	sizeCalls int
}

func newClient(name string, version uint32, secs map[string][]byte) *testClient {
	return &testClient{name: name, version: version, secs: secs, align: 16}
}

func (c *testClient) ID() ClientID { return ClientID{c.name, c.version} }

func (c *testClient) names() []string {
	var n []string
	for k := range c.secs {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

type sizeUser struct{ names []string }

func (c *testClient) Size(ctx *PersistContext) ([]SectionSpec, any, error) {
	c.sizeCalls++
	c.existing = ctx.Existing
	c.offsets = map[string]int64{}
	u := &sizeUser{names: c.names()}
	var specs []SectionSpec
	for _, n := range u.names {
		specs = append(specs, SectionSpec{Name: n, Size: int64(len(c.secs[n])), Align: c.align})
	}
	return specs, u, nil
}

func (c *testClient) Persist(ctx *PersistContext, i int, w io.Writer, user any) error {
	u := user.(*sizeUser) // the same value Size returned
	c.userSeen = append(c.userSeen, user)
	n := u.names[i]
	if c.offsets == nil {
		c.offsets = map[string]int64{}
	}
	c.offsets[n] = ctx.Offset
	data := c.secs[n]
	_, err := w.Write(data[:int64(len(data))-min(c.shortBy, int64(len(data)))])
	return err
}

func (c *testClient) Resurrect(f *File, secs []Section) error {
	if c.resurErr != nil {
		return c.resurErr
	}
	c.got = map[string][]byte{}
	for _, s := range secs {
		c.got[s.Name] = s.Data
	}
	return nil
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

var testID = Identity{BuildID: []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}, Size: 123456, ModTime: 1_700_000_000_123_456_789}

func newCache(t testing.TB) *Cache {
	t.Helper()
	return &Cache{Dir: t.TempDir() + "/pc"}
}

// validFile stores a small two-client file and returns its bytes.
func validFile(t testing.TB) []byte {
	t.Helper()
	c := newCache(t)
	a := newClient("alpha", 1, map[string][]byte{"one": pattern(100, 1), "two": pattern(33, 2), "empty": nil})
	b := newClient("beta", 7, map[string][]byte{"x": pattern(300, 3)})
	b.align = 4096
	if err := c.Store("k", testID, a, b); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(c.Path("k"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// reseal recomputes the header checksum (and its copy in the footer) after
// a test edited a header field on purpose.
func reseal(data []byte) {
	crc := checksum(data[:hHeaderCRC])
	le.PutUint32(data[hHeaderCRC:], crc)
	le.PutUint32(data[len(data)-footerSize+fHeaderCRC:], crc)
}

func wantReason(t *testing.T, err error, r Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want rejection (%v)", r)
	}
	if got := ReasonOf(err); got != r {
		t.Fatalf("reason %v (%v), want %v", got, err, r)
	}
}

func sameSections(t *testing.T, got map[string][]byte, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d sections, want %d", len(got), len(want))
	}
	for k, w := range want {
		if !bytes.Equal(got[k], w) {
			t.Errorf("section %s: got %d bytes %s, want %d bytes", k, len(got[k]), fmt.Sprintf("%.16x", got[k]), len(w))
		}
	}
}
