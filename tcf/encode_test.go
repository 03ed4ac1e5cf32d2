package tcf

import (
	"bytes"
	"encoding/json"
	"testing"
)

// stdJSON is v as encoding/json writes it without HTML escaping.
func stdJSON(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// AppendJSON writes strings and the generic shapes of events (maps, slices,
// their scalars) byte for byte as encoding/json does: clients that compare
// replies (and the golden tests) see no difference between the hand-made
// encodings and the fallback.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	// Every byte at every place is internal/jsonstr's test; here, that tcf
	// writes <, > and & as they are.
	strs := []string{"", "a\x03b\x00", "<>&", "\u2028\xff é"}
	for _, s := range strs {
		if got, want := AppendJSONString(nil, s), stdJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("string %q: %s, encoding/json %s", s, got, want)
		}
	}
	values := []any{
		map[string]any{},
		map[string]any(nil),
		[]any(nil),
		[]any{},
		[]map[string]any(nil),
		map[string]any{"b": 1, "a": "x", "C": true, "é": nil, "\u2028": uint64(1) << 63},
		map[string]any{
			"Instances": []map[string]any{{"Address": uint64(0x401136), "HitCount": 3, "LocationContext": "P1", "BreakpointType": "Software", "Size": uint64(1)}},
			"List":      []any{int64(-5), int32(7), uint32(8), uint(9), 1.5, []string{"x", "y"}, []string(nil)},
			"Nested":    map[string]any{"z": map[string]any{"y": []any{nil, false}}},
			"Float":     3.25,
			"Report":    &ErrorReport{Code: 1, Format: "f"},
		},
	}
	for _, v := range values {
		got, err := AppendJSON(nil, v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if want := stdJSON(t, v); !bytes.Equal(got, want) {
			t.Errorf("%#v:\n got %s\nwant %s", v, got, want)
		}
	}
}

// FuzzAppendJSON checks any string as a map key and value against
// encoding/json.
func FuzzAppendJSON(f *testing.F) {
	f.Add("Signal", "SIGTRAP")
	f.Add("\xff\u2028", "\b\f\x7f")
	f.Fuzz(func(t *testing.T, k, v string) {
		m := map[string]any{k: v, "n": []any{v, 1}}
		got, err := AppendJSON(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if want := stdJSON(t, m); !bytes.Equal(got, want) {
			t.Fatalf("got %s want %s", got, want)
		}
	})
}

// BenchmarkAppendJSONStatus encodes a breakpoint status, as every hit does.
func BenchmarkAppendJSONStatus(b *testing.B) {
	v := map[string]any{"Instances": []map[string]any{{
		"LocationContext": "P1234", "Address": uint64(0x401136), "Size": uint64(1),
		"BreakpointType": "Software", "HitCount": 12345,
	}}}
	var buf []byte
	for b.Loop() {
		buf, _ = AppendJSON(buf[:0], v)
	}
}
