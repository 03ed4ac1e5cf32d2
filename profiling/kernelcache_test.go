package profiling

import (
	"strings"
	"testing"

	"github.com/sondedbg/sonde/pcache"
)

// TestKallsymsCacheRoundTrip stores kernel symbols in a cache and loads them
// back the way LocalKernel does.
func TestKallsymsCacheRoundTrip(t *testing.T) {
	k, err := ReadKallsyms(strings.NewReader("ffffffff81000000 T _text\nffffffff81000100 t helper\nffffffff81000200 T entry [mod]\n"))
	if err != nil || len(k.addrs) != 3 {
		t.Fatalf("%v %+v", err, k)
	}
	c := &pcache.Cache{Dir: t.TempDir()}
	id := pcache.Identity{BuildID: []byte("kernel")}
	if err := c.Store("kallsyms-test", id, &kallsymsClient{k: k}); err != nil {
		t.Fatal(err)
	}
	cl := &kallsymsClient{}
	f, err := c.Load("kallsyms-test", id, cl)
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // the names must not point into the unmapped file
	for _, a := range []uint64{0xffffffff81000000, 0xffffffff81000150, 0xffffffff81000fff} {
		if got, want := cl.k.Lookup(a), k.Lookup(a); got != want || got == "" {
			t.Errorf("%#x: %q from the cache, %q read", a, got, want)
		}
	}
	// In place, the symbols lie in the mapped file (kept open meanwhile).
	in := &kallsymsClient{inPlace: true}
	f, err = c.Load("kallsyms-test", id, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []uint64{0xffffffff81000000, 0xffffffff81000150, 0xffffffff81000fff} {
		if got, want := in.k.Lookup(a), k.Lookup(a); got != want || got == "" {
			t.Errorf("%#x: %q from the mapped cache, %q read", a, got, want)
		}
	}
	f.Close()
	// A damaged section is refused, not trusted.
	bad := &kallsymsClient{}
	if err := bad.Resurrect(nil, []pcache.Section{{Data: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}}}); err == nil {
		t.Errorf("a section announcing 2^63 symbols was accepted")
	}
}
