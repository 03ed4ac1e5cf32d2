package pcache

import (
	"os"
	"testing"
)

// TestManageListVerifyClear stores two files, corrupts one, and checks what
// list, verify and clear say of them.
func TestManageListVerifyClear(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	id := Identity{BuildID: []byte{1, 2, 3}, Size: 10, ModTime: 20}
	for _, key := range []string{"good", "bad"} {
		if err := c.Store(key, id, newClient("cli", 1, map[string][]byte{"idx": []byte("0123456789")})); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := c.Entries()
	if err != nil || len(ents) != 2 {
		t.Fatalf("entries: %v, %+v", err, ents)
	}
	// Flip a byte of bad's section.
	bad := c.Path("bad")
	b, _ := os.ReadFile(bad)
	b[4096] ^= 0xff
	os.WriteFile(bad, b, 0o600)
	for _, e := range ents {
		gotID, secs, err := c.Verify(e)
		switch e.Key {
		case "good":
			if err != nil || !gotID.Equal(id) || len(secs) != 1 || secs[0].Name != "idx" || secs[0].Size != 10 {
				t.Errorf("verify good: %v %+v %+v", err, gotID, secs)
			}
		case "bad":
			if ReasonOf(err) != ReasonChecksum {
				t.Errorf("verify bad: %v, want a checksum error", err)
			}
		}
	}
	n, size, err := c.Clear()
	if err != nil || n != 2 || size == 0 {
		t.Fatalf("clear: %d files, %d bytes, %v", n, size, err)
	}
	if ents, _ := c.Entries(); len(ents) != 0 {
		t.Fatalf("after clear: %+v", ents)
	}
	empty := &Cache{Dir: t.TempDir() + "/none"}
	if n, _, err := empty.Clear(); n != 0 || err != nil {
		t.Fatalf("clear of a missing cache: %d %v", n, err)
	}
}
