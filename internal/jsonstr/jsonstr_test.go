package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// stdJSON is s as encoding/json writes it, with or without HTML escaping.
func stdJSON(t testing.TB, s string, html bool) []byte {
	t.Helper()
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(html)
	if err := e.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// check fails t where either escaper differs from encoding/json on s.
func check(t testing.TB, s string) {
	t.Helper()
	if got, want := Append(nil, s), stdJSON(t, s, false); !bytes.Equal(got, want) {
		t.Errorf("Append %q: %s, encoding/json %s", s, got, want)
	}
	if got, want := AppendHTMLEscaped([]byte("x"), s), append([]byte("x"), stdJSON(t, s, true)...); !bytes.Equal(got, want) {
		t.Errorf("AppendHTMLEscaped %q: %s, encoding/json x%s", s, got, want)
	}
}

// TestMatchesEncodingJSON: every ASCII byte, the runes encoding/json treats
// specially, invalid UTF-8, and each byte that needs a second look at each
// place of a string longer than two of the words the prefix scans read.
func TestMatchesEncodingJSON(t *testing.T) {
	var strs []string
	for c := 0; c < 0x80; c++ {
		strs = append(strs, "a"+string(rune(c))+"b")
	}
	strs = append(strs, "", "\u2028", "\u2029", "\xff", "a\xc3", "é€😀", "<>&", "\x00\x03",
		"operator<<(std::ostream&, \"q\" \\ \u2028 é \x01 \xff)")
	for _, c := range []byte{0, 0x1f, '"', '\\', '<', '>', '&', 0x7f, 0x80, 0xc3, 0xe2, 0xff} {
		for at := 0; at < 19; at++ {
			b := []byte("P1234.1234 !~#frame")
			b[at] = c
			strs = append(strs, string(b))
		}
	}
	for _, s := range strs {
		check(t, s)
	}
}

// FuzzAppend: any string encodes as encoding/json encodes it, in both modes.
func FuzzAppend(f *testing.F) {
	f.Add("SIGTRAP")
	f.Add("\xff\u2028\b\f\x7f")
	f.Add("std::vector<int, std::allocator<int> >&&")
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

// BenchmarkAppend: a context ID and a C++ name, as replies and stack frames
// carry them.
func BenchmarkAppend(b *testing.B) {
	strs := []string{"P1234.1234", "std::vector<int, std::allocator<int> >::push_back(int const&)"}
	var buf []byte
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, s := range strs {
				buf = Append(buf, s)
			}
		}
	})
	b.Run("html", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, s := range strs {
				buf = AppendHTMLEscaped(buf, s)
			}
		}
	})
}
