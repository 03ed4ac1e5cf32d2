package tcf

import "testing"

// TestStringCache: repeated string arguments come from the channel's cache
// (no allocation), and anything the cache cannot answer exactly — escapes,
// other strings, spaces around the text — is decoded as before.
func TestStringCache(t *testing.T) {
	var cache stringCache
	str := func(text string) string {
		a := Args{fields: []Field{{Data: []byte(text)}}, strs: &cache}
		s := a.String()
		if err := a.End(); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return s
	}
	for _, c := range []struct{ text, want string }{
		{`"P123.456"`, "P123.456"},
		{`"P123.456"`, "P123.456"},
		{`"P123.4567"`, "P123.4567"},
		{`"P123.45"`, "P123.45"},
		{`"a\"b"`, `a"b`},
		{`"a\"b"`, `a"b`},
		{`"a\\b"`, `a\b`},
		{` "P123.456" `, "P123.456"},
		{`""`, ""},
		{`"\u0041"`, "A"},
		{`"A"`, "A"},
	} {
		if got := str(c.text); got != c.want {
			t.Errorf("%s: got %q want %q", c.text, got, c.want)
		}
	}
	// More distinct strings than the cache holds: each still right.
	for i := range 40 {
		text := `"S` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `"`
		if got := str(text); got != text[1:len(text)-1] {
			t.Errorf("%s: got %q", text, got)
		}
	}
	text := []byte(`"P7.7"`)
	str(string(text))
	fields := []Field{{Data: text}}
	a := Args{strs: &cache}
	if n := testing.AllocsPerRun(100, func() {
		a.fields, a.next = fields, 0
		if a.String() != "P7.7" {
			t.Fatal("wrong string")
		}
	}); n != 0 {
		t.Errorf("a cached string allocated %v times", n)
	}
}

// TestIgnore: Ignore takes a field whatever it holds, and still counts.
func TestIgnore(t *testing.T) {
	a := NewArgs([]Field{{Data: []byte(`{"a":[}`)}, {Data: []byte(`"s"`)}})
	a.Ignore()
	if s := a.String(); s != "s" || a.End() != nil {
		t.Fatalf("after Ignore: %q, %v", s, a.End())
	}
	a = NewArgs(nil)
	a.Ignore()
	if a.End() == nil {
		t.Fatal("Ignore of a missing field is no error")
	}
}
