package pcache

import (
	"os"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the validator: it must return a typed
// error or a file whose sections lie inside the input, never panic or hang.
func FuzzDecode(f *testing.F) {
	c := &Cache{Dir: f.TempDir() + "/pc"}
	a := newClient("alpha", 1, map[string][]byte{"one": pattern(100, 1), "two": pattern(33, 2)})
	if err := c.Store("k", testID, a); err != nil {
		f.Fatal(err)
	}
	data, err := os.ReadFile(c.Path("k"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-1])
	f.Add(data[:dataOffset+footerSize])
	f.Add([]byte("SONDEPC\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b, "fuzz", nil)
		if err != nil {
			if ReasonOf(err) == 0 {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		for _, s := range file.Sections() {
			if len(s.Data) > len(b) || s.Align <= 0 {
				t.Fatalf("section %s/%s: %d bytes align %d", s.Client, s.Name, len(s.Data), s.Align)
			}
			if checksum(s.Data) == 0 && len(s.Data) > 0 && s.Client == "" {
				t.Fatal("section without client")
			}
		}
	})
}
