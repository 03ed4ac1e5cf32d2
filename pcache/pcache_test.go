package pcache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestRoundTrip(t *testing.T) {
	c := newCache(t)
	a := newClient("alpha", 1, map[string][]byte{"one": pattern(100, 1), "two": pattern(33, 2), "empty": nil})
	b := newClient("beta", 7, map[string][]byte{"x": pattern(300, 3), "y": pattern(5000, 4)})
	b.align = 4096
	if err := c.Store("k", testID, a, b); err != nil {
		t.Fatal(err)
	}
	// Size's user data reached every Persist call.
	if len(a.userSeen) != 3 || a.userSeen[0] != a.userSeen[2] || len(b.userSeen) != 2 {
		t.Fatalf("user data not shared: %v %v", a.userSeen, b.userSeen)
	}
	for n, off := range b.offsets {
		if off%4096 != 0 {
			t.Errorf("beta/%s persisted at %#x, not page-aligned", n, off)
		}
	}
	a2 := newClient("alpha", 1, nil)
	b2 := newClient("beta", 7, nil)
	f, err := c.Load("k", testID, a2, b2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sameSections(t, a2.got, a.secs)
	sameSections(t, b2.got, b.secs)
	// Offsets announced to Persist are where the data is in the file.
	for _, s := range f.Sections() {
		want := a.offsets[s.Name]
		if s.Client == "beta" {
			want = b.offsets[s.Name]
		}
		if d, ok := f.Section(s.Client, s.Name); !ok || len(d) != len(s.Data) {
			t.Errorf("Section(%s, %s) not found", s.Client, s.Name)
		}
		if len(s.Data) > 0 && &f.data[want] != &s.Data[0] {
			t.Errorf("%s/%s: Persist was told offset %#x, data is elsewhere", s.Client, s.Name, want)
		}
	}
	if f.Identity.Size != testID.Size || !f.Identity.Equal(testID) {
		t.Errorf("identity %+v", f.Identity)
	}
	// A client that wrote nothing to the file is not called.
	other := newClient("gamma", 1, nil)
	f2, err := c.Load("k", testID, other)
	if err != nil {
		t.Fatal(err)
	}
	f2.Close()
	if other.got != nil {
		t.Error("Resurrect called for a client with no sections")
	}
}

func TestTruncationAlwaysRejected(t *testing.T) {
	data := validFile(t)
	for cut := 1; cut < len(data); cut++ {
		_, err := Decode(data[:len(data)-cut], "f", &testID)
		want := ReasonTruncated
		if len(data)-cut < len(magic) {
			want = ReasonNotCache
		}
		if ReasonOf(err) != want {
			t.Fatalf("cut %d bytes: %v, want %v", cut, err, want)
		}
	}
	// Extra bytes after the footer are rejected too.
	_, err := Decode(append(append([]byte(nil), data...), 0), "f", &testID)
	if err == nil {
		t.Fatal("file with a trailing byte accepted")
	}
}

func TestCorruptAnyByteRejected(t *testing.T) {
	data := validFile(t)
	if _, err := Decode(data, "f", &testID); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data))
	for i := range data {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			copy(buf, data)
			buf[i] ^= x
			if _, err := Decode(buf, "f", &testID); err == nil {
				t.Fatalf("byte %#x xor %#x accepted", i, x)
			} else if ReasonOf(err) == 0 {
				t.Fatalf("byte %#x: untyped error %v", i, err)
			}
		}
	}
}

func TestRejectReasons(t *testing.T) {
	data := validFile(t)
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), data...)
		f(b)
		return b
	}
	cases := []struct {
		name string
		data []byte
		want *Identity
		r    Reason
	}{
		{"version", edit(func(b []byte) { le.PutUint32(b[hVersion:], FormatVersion+1); reseal(b) }), &testID, ReasonVersion},
		{"arch", edit(func(b []byte) { le.PutUint32(b[hArch:], 183); reseal(b) }), &testID, ReasonArch},
		{"header checksum", edit(func(b []byte) { b[hSrcSize] ^= 1 }), &testID, ReasonChecksum},
		{"section checksum", edit(func(b []byte) { b[dataOffset] ^= 1 }), &testID, ReasonChecksum},
		{"not a cache file", []byte("\x7fELF and so on"), nil, ReasonNotCache},
		{"empty", nil, nil, ReasonNotCache},
		{"footer magic", edit(func(b []byte) { b[len(b)-1] = 'X' }), &testID, ReasonTruncated},
		{"build-id", data, &Identity{BuildID: []byte{1}, Size: testID.Size, ModTime: testID.ModTime}, ReasonModule},
		{"size", data, &Identity{BuildID: testID.BuildID, Size: testID.Size + 1, ModTime: testID.ModTime}, ReasonModule},
		{"mtime", data, &Identity{BuildID: testID.BuildID, Size: testID.Size, ModTime: testID.ModTime + 1}, ReasonModule},
		{"flags", edit(func(b []byte) { b[hFlags] = 1; reseal(b) }), &testID, ReasonCorrupt},
		{"table outside", edit(func(b []byte) { le.PutUint64(b[hTableOff:], 1<<40); reseal(b) }), &testID, ReasonCorrupt},
		{"header padding", edit(func(b []byte) { b[1000] = 1 }), &testID, ReasonCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data, "f", tc.want)
			wantReason(t, err, tc.r)
		})
	}
	// Without an expected identity the file is valid.
	if _, err := Decode(data, "f", nil); err != nil {
		t.Fatal(err)
	}
}

func TestOwnershipAndPermissions(t *testing.T) {
	c := newCache(t)
	a := newClient("alpha", 1, map[string][]byte{"one": pattern(10, 1)})
	if err := c.Store("k", testID, a); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(c.Path("k"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, want 0600", fi.Mode().Perm())
	}
	if err := os.Chmod(c.Path("k"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = c.Load("k", testID, a)
	wantReason(t, err, ReasonOwner)
	os.Chmod(c.Path("k"), 0o600)
	if os.Geteuid() == 0 {
		if err := os.Chown(c.Path("k"), 4242, 4242); err != nil {
			t.Fatal(err)
		}
		_, err = c.Load("k", testID, a)
		wantReason(t, err, ReasonOwner)
		os.Chown(c.Path("k"), 0, 0)
	}
	if err := os.Chmod(c.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err = c.Load("k", testID, a)
	wantReason(t, err, ReasonOwner)
	os.Chmod(c.Dir, 0o700)
	if _, err := c.Load("k", testID, a); err != nil {
		t.Fatal(err)
	}
	_, err = c.Load("other", testID, a)
	if !errors.Is(err, ErrMissing) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestClientVersionAndResurrectErrors(t *testing.T) {
	c := newCache(t)
	a := newClient("alpha", 1, map[string][]byte{"one": pattern(10, 1)})
	if err := c.Store("k", testID, a); err != nil {
		t.Fatal(err)
	}
	_, err := c.Load("k", testID, newClient("alpha", 2, nil))
	wantReason(t, err, ReasonClientVersion)
	bad := newClient("alpha", 1, nil)
	bad.resurErr = errors.New("index out of order")
	_, err = c.Load("k", testID, bad)
	wantReason(t, err, ReasonClient)
}

func TestPersistErrorsKeepOldFile(t *testing.T) {
	c := newCache(t)
	a := newClient("alpha", 1, map[string][]byte{"one": pattern(10, 1)})
	if err := c.Store("k", testID, a); err != nil {
		t.Fatal(err)
	}
	short := newClient("alpha", 1, map[string][]byte{"one": pattern(20, 9)})
	short.shortBy = 3
	wantReason(t, c.Store("k", testID, short), ReasonClient)
	dup := newClient("beta", 1, map[string][]byte{"x": nil})
	dupSpecs := &dupClient{dup}
	wantReason(t, c.Store("k", testID, dupSpecs), ReasonClient)
	got := newClient("alpha", 1, nil)
	f, err := c.Load("k", testID, got)
	if err != nil {
		t.Fatal(err)
	}
	sameSections(t, got.got, a.secs)
	f.Close()
	ents, _ := os.ReadDir(c.Dir)
	for _, e := range ents {
		if e.Name() != "k"+fileSuffix && e.Name() != lockName {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// dupClient announces the same section name twice.
type dupClient struct{ *testClient }

func (d *dupClient) Size(ctx *PersistContext) ([]SectionSpec, any, error) {
	return []SectionSpec{{Name: "x"}, {Name: "x"}}, &sizeUser{names: []string{"x", "x"}}, nil
}

func TestMergeKeepsOtherClients(t *testing.T) {
	c := newCache(t)
	a := newClient("alpha", 1, map[string][]byte{"one": pattern(100, 1)})
	b := newClient("beta", 1, map[string][]byte{"x": pattern(50, 2)})
	if err := c.Store("k", testID, a); err != nil {
		t.Fatal(err)
	}
	if err := c.Store("k", testID, b); err != nil {
		t.Fatal(err)
	}
	a2 := newClient("alpha", 1, map[string][]byte{"two": pattern(7, 5)})
	if err := c.Store("k", testID, a2); err != nil {
		t.Fatal(err)
	}
	// alpha saw its old sections to merge with.
	if len(a2.existing) != 1 || a2.existing[0].Name != "one" {
		t.Fatalf("Existing = %+v", a2.existing)
	}
	ga, gb := newClient("alpha", 1, nil), newClient("beta", 1, nil)
	f, err := c.Load("k", testID, ga, gb)
	if err != nil {
		t.Fatal(err)
	}
	sameSections(t, ga.got, a2.secs) // alpha's sections replaced
	sameSections(t, gb.got, b.secs)  // beta's kept
	f.Close()
	// Another version of the source file starts over.
	id2 := testID
	id2.ModTime++
	if err := c.Store("k", id2, a); err != nil {
		t.Fatal(err)
	}
	gb = newClient("beta", 1, nil)
	f, err = c.Load("k", id2, gb)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if gb.got != nil {
		t.Error("sections derived from the old source file were kept")
	}
	if _, err := c.Load("k", testID); ReasonOf(err) != ReasonModule {
		t.Errorf("old identity: %v", err)
	}
}

func TestPruneLRU(t *testing.T) {
	c := newCache(t)
	big := map[string][]byte{"d": pattern(10000, 1)}
	for i, k := range []string{"a", "b", "c"} {
		if err := c.Store(k, testID, newClient("x", 1, big)); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(time.Duration(i-10) * time.Hour)
		os.Chtimes(c.Path(k), old, old)
	}
	// Loading "a" makes it the most recently used.
	f, err := c.Load("a", testID)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	tmp := filepath.Join(c.Dir, tempPrefix+"dead-1")
	os.WriteFile(tmp, []byte("x"), 0o600)
	old := time.Now().Add(-2 * staleTemp)
	os.Chtimes(tmp, old, old)
	fi, _ := os.Stat(c.Path("a"))
	if err := c.Prune(2 * fi.Size()); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(c.Path("b")) || !exists(c.Path("a")) || !exists(c.Path("c")) {
		t.Errorf("after prune: a %v b %v c %v; want b (least recently used) removed only",
			exists(c.Path("a")), exists(c.Path("b")), exists(c.Path("c")))
	}
	if exists(tmp) {
		t.Error("stale temporary file kept")
	}
	// Store prunes to MaxBytes but never the file it wrote.
	c.MaxBytes = 1
	if err := c.Store("d", testID, newClient("x", 1, big)); err != nil {
		t.Fatal(err)
	}
	if !exists(c.Path("d")) || exists(c.Path("a")) || exists(c.Path("c")) {
		t.Error("Store's pruning kept old files or removed the new one")
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("SONDE_NO_CACHE", "")
	t.Setenv("SONDE_CACHE_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	if c := Default(); c == nil || c.Dir != "/x/cache/sonde/pcache" {
		t.Errorf("Default() = %+v", c)
	}
	t.Setenv("SONDE_CACHE_DIR", "/y")
	if c := Default(); c == nil || c.Dir != "/y/pcache" {
		t.Errorf("Default() = %+v", c)
	}
	t.Setenv("SONDE_CACHE_DIR", "off")
	if c := Default(); c != nil {
		t.Errorf("SONDE_CACHE_DIR=off: %+v", c)
	}
	t.Setenv("SONDE_CACHE_DIR", "")
	t.Setenv("SONDE_NO_CACHE", "1")
	if c := Default(); c != nil {
		t.Errorf("SONDE_NO_CACHE=1: %+v", c)
	}
}

func TestBadKeys(t *testing.T) {
	c := newCache(t)
	for _, k := range []string{"", "../x", "a/b", ".lock", "a b"} {
		if err := c.Store(k, testID); err == nil {
			t.Errorf("key %q accepted", k)
		}
	}
}

// TestLargeFileChecksums: files big enough to be checked on several cores
// still reject a flipped byte in any section, and name that section.
func TestLargeFileChecksums(t *testing.T) {
	c := newCache(t)
	secs := map[string][]byte{"a": pattern(1<<20, 1), "b": pattern(3<<20, 2), "c": pattern(512<<10, 3), "d": pattern(10, 4)}
	if err := c.Store("big", testID, newClient("x", 1, secs)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(c.Path("big"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(data, "f", &testID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.Sections() {
		off := int(uintptr(unsafe.Pointer(&s.Data[0]))-uintptr(unsafe.Pointer(&data[0]))) + len(s.Data)/2
		bad := append([]byte(nil), data...)
		bad[off] ^= 0x10
		_, err := Decode(bad, "f", &testID)
		wantReason(t, err, ReasonChecksum)
		if want := "section x/" + s.Name + " "; !strings.Contains(err.Error(), want) {
			t.Errorf("flip in %s: %v", s.Name, err)
		}
	}
}

// TestBackgroundLoadChecksums: a Background cache checks every section on
// one goroutine, with the same result: a large file loads whole, and a
// flipped byte in any of its sections is refused.
func TestBackgroundLoadChecksums(t *testing.T) {
	c := newCache(t)
	c.Background = true
	secs := map[string][]byte{"a": pattern(1<<20, 1), "b": pattern(3<<20, 2), "c": pattern(10, 3)}
	if err := c.Store("big", testID, newClient("x", 1, secs)); err != nil {
		t.Fatal(err)
	}
	cl := newClient("x", 1, nil)
	f, err := c.Load("big", testID, cl)
	if err != nil {
		t.Fatal(err)
	}
	sameSections(t, cl.got, secs)
	data := append([]byte(nil), f.data...)
	var offs []int
	for _, s := range f.Sections() {
		offs = append(offs, int(uintptr(unsafe.Pointer(&s.Data[0]))-uintptr(unsafe.Pointer(&f.data[0])))+len(s.Data)-1)
	}
	f.Close()
	for _, off := range offs {
		bad := append([]byte(nil), data...)
		bad[off] ^= 0x01
		if err := os.WriteFile(c.Path("big"), bad, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := c.Load("big", testID, newClient("x", 1, nil))
		wantReason(t, err, ReasonChecksum)
	}
}
