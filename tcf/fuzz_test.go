package tcf

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// perByteValidUTF8 replaces each invalid byte with U+FFFD, as JSON encoders do.
func perByteValidUTF8(s string) string {
	var out []byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\ufffd"...)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

// FuzzReader feeds arbitrary bytes to the message reader (whole and one
// byte at a time): it must never panic, never return a message larger than
// its limit, and must give the same messages either way.
func FuzzReader(f *testing.F) {
	seeds := [][]byte{
		[]byte("E\x00Locator\x00Hello\x00[\"ZeroCopy\"]\x00\x03\x01"),
		[]byte("C\x001\x00Locator\x00sync\x00\x03\x01"),
		[]byte("C\x002\x00Memory\x00set\x00\"P1\"\x00(5)\x03\x03\x05ab\x00\x03d\x00\x03\x01"),
		[]byte("R\x001\x00\x00\x03\x01N\x002\x00\x03\x01"),
		[]byte("C\x00t\x03\x00k\x00S\x00c\x00\x03\x03\x82\x00[1,2]\x00\x03\x01"),
		[]byte("\x03\x02{\"Code\":3,\"Time\":1}\x00\x03\x01"),
		[]byte("C\x001\x00\x03\x03\xff\xff\xff\xff\xff\xff\xff\xff\x7f"),
		[]byte("\x03\x07"),
		[]byte("F\x0050\x00\x03\x01"),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 10
		whole := readAll(t, NewReader(bytes.NewReader(data), limit), limit)
		bytewise := readAll(t, NewReader(iotest.OneByteReader(bytes.NewReader(data)), limit), limit)
		if !bytes.Equal(whole, bytewise) {
			t.Fatalf("chunking changed the result:\n%q\n%q", whole, bytewise)
		}
	})
}

// readAll decodes every message and returns a canonical dump of them.
func readAll(t *testing.T, r *Reader, limit int) []byte {
	var dump bytes.Buffer
	for i := 0; i < 10000; i++ {
		m, err := r.ReadMessage()
		if m != nil {
			size := len(m.Token) + len(m.Service) + len(m.Name)
			for _, f := range m.Fields {
				size += len(f.Data)
			}
			if size > limit {
				t.Fatalf("message of %d bytes over the %d limit", size, limit)
			}
			dump.WriteByte(m.Kind)
			dump.WriteString(strconv.Quote(string(m.Token)) + strconv.Quote(string(m.Service)) + strconv.Quote(string(m.Name)))
			for _, f := range m.Fields {
				dump.WriteString(strconv.FormatBool(f.Binary) + strconv.Quote(string(f.Data)))
			}
			dump.WriteByte('\n')
		}
		if err != nil {
			var me *MessageError
			if errors.As(err, &me) {
				dump.WriteString("message error: " + me.Reason + "\n")
				continue
			}
			if err != io.EOF {
				var fe *FramingError
				var eos *EOSError
				if !errors.As(err, &fe) && !errors.As(err, &eos) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
			}
			dump.WriteString("end\n")
			// A failed reader stays failed.
			if _, err2 := r.ReadMessage(); err2 == nil {
				t.Fatal("reader recovered after a final error")
			}
			return dump.Bytes()
		}
	}
	t.Fatal("reader did not stop")
	return nil
}

// FuzzArgs decodes arbitrary fields with every getter: no panics, and what
// decodes as an integer re-encodes to the same text.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{`"str"`, `18446744073709551615`, `-9223372036854775808`, `1.5`, `null`, ``,
		`true`, `"AAEC"`, `["a","b"]`, `{"ID":"x","Addr":18446744073709551615}`, `[[[[`, `"\u0003"`,
		`{"Code":16,"Time":1,"Format":"x {0}","Params":[1],"CausedBy":{"Code":1}}`, `01`, `-0`, ` 7 `,
		`"a\"b\u00e9\ud83d\ude00\ud800"`, "\"\xff\"", `["FP0.P1.1","FP1.P1.1"]`, `["a",null,1]`, `[1,]`,
		`{"ID":"x","IP":18446744073709551615,"ip":1,"Name":"n","L":[{"IP":2}]}`, `{"a":{"b":[{"c":null}]}}`,
		`1e400`, `"\`, `[tru`, `{"a" 1}`} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("\x00\x01raw"), true)
	f.Fuzz(func(t *testing.T, data []byte, binary bool) {
		field := []Field{{Data: data, Binary: binary}}
		getters := []func(a *Args){
			func(a *Args) { _ = a.String() },
			func(a *Args) {
				v := a.Uint64()
				if a.Err() == nil && !binary && len(trimSpace(data)) > 0 && strconv.FormatUint(v, 10) != string(trimSpace(data)) {
					t.Fatalf("Uint64(%q) = %d", data, v)
				}
			},
			func(a *Args) {
				v := a.Int64()
				if a.Err() == nil && !binary && strconv.FormatInt(v, 10) != string(trimSpace(data)) && string(trimSpace(data)) != "-0" {
					t.Fatalf("Int64(%q) = %d", data, v)
				}
			},
			func(a *Args) { a.Int() },
			func(a *Args) { a.Bool() },
			func(a *Args) { a.Binary() },
			func(a *Args) { a.Strings() },
			func(a *Args) {
				p := a.Props()
				for k := range p {
					p.Uint64(k)
					p.Int64(k)
					p.String(k)
					p.Strings(k)
				}
			},
			func(a *Args) { a.Raw() },
			func(a *Args) {
				if r := a.Report(); r != nil {
					_ = r.Error()
					var b Builder
					b.Error(r)
				}
			},
			func(a *Args) { var v any; a.JSON(&v) },
			func(a *Args) {
				var v []struct {
					ID   string
					IP   uint64
					Name *string
					L    []struct{ IP uint64 }
				}
				a.JSON(&v)
			},
			func(a *Args) { a.Skip() },
		}
		for _, g := range getters {
			a := NewArgs(field)
			g(a)
			err := a.End()
			var ae *ArgError
			if err != nil && !errors.As(err, &ae) {
				t.Fatalf("error of type %T: %v", err, err)
			}
		}
		// A channel's string cache gives what decoding gives: the same
		// field twice (the second from the cache, if kept), and after
		// strings that differ from it in one byte.
		plain := NewArgs(field)
		want, wantErr := plain.String(), plain.End()
		var cache stringCache
		for _, prime := range [][]byte{data, append([]byte(nil), data...), flipLast(data), data} {
			c := Args{fields: []Field{{Data: prime, Binary: binary}}, strs: &cache}
			_ = c.String()
			c = Args{fields: field, strs: &cache}
			got, gotErr := c.String(), c.End()
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("String(%q) with the cache: %q, %v; without: %q, %v", data, got, gotErr, want, wantErr)
			}
		}
	})
}

// flipLast returns a copy of p with its last byte changed (p itself if empty).
func flipLast(p []byte) []byte {
	if len(p) == 0 {
		return p
	}
	q := append([]byte(nil), p...)
	q[len(q)-1] ^= 1
	return q
}

// FuzzRoundTrip encodes a command from arbitrary strings and binary data,
// decodes it and compares.
func FuzzRoundTrip(f *testing.F) {
	f.Add("1", "Memory", "set", "a\x03b", []byte("\x00\x03\x01"), false)
	f.Add("", "", "", "", []byte{}, true)
	f.Add("tok\x03", "S\x03", "c", "\xff\xfe", []byte("x"), true)
	f.Fuzz(func(t *testing.T, token, service, name, s string, bin []byte, zeroCopy bool) {
		for _, x := range []string{token, service, name} {
			if bytes.IndexByte([]byte(x), 0) >= 0 {
				return // names cannot hold the field separator
			}
		}
		var b Builder
		b.ZeroCopy = zeroCopy
		b.Command(token, service, name).String(s).Binary(bin).Uint64(uint64(len(bin))).End()
		wire, err := b.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewReader(bytes.NewReader(wire), 0).ReadMessage()
		if err != nil {
			t.Fatalf("%q: %v", wire, err)
		}
		if m.Kind != 'C' || string(m.Token) != token || string(m.Service) != service || string(m.Name) != name {
			t.Fatalf("header changed: %q", wire)
		}
		a := NewArgs(m.Fields)
		gs, gb, gn := a.String(), a.Binary(), a.Uint64()
		if err := a.End(); err != nil {
			t.Fatalf("%q: %v", wire, err)
		}
		if want := perByteValidUTF8(s); gs != want {
			t.Fatalf("string %q came back as %q", s, gs)
		}
		if !bytes.Equal(gb, bin) || gn != uint64(len(bin)) {
			t.Fatalf("binary %q came back as %q", bin, gb)
		}
	})
}
