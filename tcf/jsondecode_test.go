package tcf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The JSON reader must decode exactly what encoding/json's Decoder with
// UseNumber decodes (it replaced it), reject what json.Valid rejects, and
// report the same kind of error. These tests and FuzzJSONDecode compare the
// two on the same input, for every kind of target the reader handles
// itself and for some it hands to encoding/json.

type jsonProbe struct {
	ID   string
	Addr uint64 `json:"Address"`
	N    int32
	I    int
	F    float32
	B    bool
	P    *jsonProbe
	L    []jsonProbe
	M    map[string]int
	X    any
	Skip string `json:"-"`
	//lint:ignore SA5008 the odd tag is what this field tests
	Dash string `json:"-,"`
	//lint:ignore SA5008 the malformed tag is what this field tests
	Bad string `json:"a\"b"` // not a valid tag name: the field's own name counts
	//lint:ignore U1000 an unexported field the decoder must skip
	unexp  int
	Ptr    *int
	Strs   []string
	Anys   []any
	Named  namedString
	Kelvin string `json:"K"` // "k" and "\u212a" (Kelvin sign) fold to it
}

type namedString string

// jsonStd is what the reader replaced: the whole text valid (json.Valid,
// no trailing data) and decoded by a Decoder with UseNumber.
func jsonStd(data []byte, v any) error {
	if !json.Valid(data) {
		return &json.SyntaxError{}
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// jsonTargets makes a fresh set of targets (pointers) to decode into.
func jsonTargets() []any {
	return []any{
		new(any), new(map[string]any), new(Props), new([]string), new(string),
		new(uint64), new(int64), new(int8), new(uint16), new(float64), new(float32), new(bool),
		new(jsonProbe), new([]jsonProbe), new([]*jsonProbe), new(map[string]jsonProbe),
		new([]struct{ IP uint64 }), new(struct{ Name string }), new(*string), new([]any),
		new(map[namedString][]int), new(json.RawMessage), new([]byte), new(struct{ N json.Number }),
		new(json.Number),
	}
}

// compareJSON decodes data into each target with both decoders and
// reports the first difference.
func compareJSON(data []byte) error {
	var x any
	var stdSyn *json.SyntaxError
	if errRef, errMine := json.Unmarshal(data, &x), validJSON(data); errors.As(errRef, &stdSyn) && (errMine == nil || errMine.Error() != errRef.Error()) {
		return fmt.Errorf("%s: encoding/json says %q, here %v", short(data), errRef, errMine)
	}
	mine, ref := jsonTargets(), jsonTargets()
	for i := range mine {
		errMine := decodeJSON(data, mine[i])
		errRef := jsonStd(data, ref[i])
		var syn *JSONSyntaxError
		var typ, stdTyp *json.UnmarshalTypeError
		switch {
		case errors.As(errRef, &stdSyn):
			if !errors.As(errMine, &syn) {
				return fmt.Errorf("%T: %s: encoding/json: syntax error; here: %v", ref[i], short(data), errMine)
			}
			continue // values after a syntax error are not comparable
		case errors.As(errRef, &stdTyp):
			if !errors.As(errMine, &typ) {
				return fmt.Errorf("%T: %s: encoding/json: %v; here: %v", ref[i], short(data), errRef, errMine)
			}
		case errRef != nil:
			if errMine == nil {
				return fmt.Errorf("%T: %s: encoding/json: %v; here no error", ref[i], short(data), errRef)
			}
			continue
		case errMine != nil:
			return fmt.Errorf("%T: %s: encoding/json: no error; here: %v", ref[i], short(data), errMine)
		}
		if !reflect.DeepEqual(mine[i], ref[i]) {
			return fmt.Errorf("%T: %s: encoding/json: %#v; here: %#v", ref[i], short(data), reflect.ValueOf(ref[i]).Elem(), reflect.ValueOf(mine[i]).Elem())
		}
	}
	return nil
}

// short quotes data for a message, cut to a readable length.
func short(data []byte) string {
	if len(data) > 80 {
		return fmt.Sprintf("%q... (%d bytes)", data[:80], len(data))
	}
	return fmt.Sprintf("%q", data)
}

var jsonSeeds = []string{
	`"str"`, `""`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u0000\u001f"`, `"\ud83d\ude00"`, `"\ud83d"`,
	`"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, "\"\xff\xfe\"", "\"\xed\xa0\x80\"", `"é"`, "\"\x01\"",
	`"\x"`, `"\u12"`, `"abc`, `18446744073709551615`, `18446744073709551616`, `-9223372036854775808`,
	`-9223372036854775809`, `1.5`, `-0`, `01`, `1.`, `1e`, `1e+`, `1E-7`, `-`, `--1`, `.5`, `+1`, `0x10`,
	`null`, `nul`, `nullx`, `true`, `false`, `tru`, `truex`, `[]`, `[1,]`, `[,1]`, `[1 2]`, `[1,2]`,
	`["a",null,"b"]`, `["a",1,true,{},[]]`, `{}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`,
	`{"ID":"x","Address":18446744073709551615,"N":-5,"F":1.5,"B":true}`,
	`{"id":"lower","ADDRESS":1,"address":2,"n":2147483648}`, `{"P":{"P":{"ID":"deep"}},"L":[{"ID":"a"},{"I":1}]}`,
	`{"M":{"a":1,"b":"x","c":null}}`, `{"X":[1,{"y":2}],"Skip":"no","-":"dash","Bad":"b","unexp":1}`,
	`{"Ptr":null,"Strs":null,"Anys":[1,"2",null]}`, `{"Ptr":7,"Strs":["a"],"Named":"n"}`,
	`{"k":"kelvin"}`, "{\"\u212a\":\"sign\"}", `{"\u004b":"esc"}`, `{"ID":1,"N":"x","B":null}`,
	`[{"IP":1},{"IP":18446744073709551615},{"ip":3,"Other":[1,2,{"a":[]}]}]`, `{"Name":"main"}`,
	` 7 `, "\t[ 1 , 2 ]\n", `[[[[`, `]`, `}`, `{"a":{"b":{"c":`, `1 2`, `"a" ]`, `{"a":1}}`,
	`[1e400]`, `{"F":1e39}`, `{"N":1.0}`, `{"I":-0}`, `{"a":"x","a":"y"}`, `{"L":[]}`, `{"L":null}`,
	`{"N":"12"}`, `{"N":12}`, `"12"`, `"x"`, `"\`, `"\u12`, `[1.`, `[tru`, `{"a":-`, `[1e+]`,
}

func TestJSONDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonSeeds {
		if err := compareJSON([]byte(s)); err != nil {
			t.Error(err)
		}
	}
}

func TestJSONDepthLimit(t *testing.T) {
	for _, n := range []int{maxJSONDepth, maxJSONDepth + 1, 200000} {
		deep := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		err := validJSON(deep)
		if (err == nil) != (n <= maxJSONDepth) || (err == nil) != json.Valid(deep) {
			t.Fatalf("depth %d: %v", n, err)
		}
		var v any
		err = decodeJSON(deep, &v)
		var syn *JSONSyntaxError
		if n > maxJSONDepth && (!errors.As(err, &syn) || !strings.Contains(err.Error(), "max depth")) {
			t.Fatalf("depth %d: %v", n, err)
		}
		if err := compareJSON(deep); err != nil {
			t.Fatalf("depth %d: %v", n, err)
		}
	}
}

func TestJSONSyntaxErrorSaysWhere(t *testing.T) {
	for _, c := range []struct {
		in   string
		off  int
		want string
	}{
		{`[1,2 x]`, 5, "invalid character 'x' after array element"},
		{`{"a":tru}`, 8, "in literal true"},
		{`"ab`, 3, "unexpected end"},
		{`1 2`, 2, "after top-level value"},
		{"\"a\x01\"", 2, `'\x01' in string literal`},
		{`-x`, 1, "in numeric literal"},
	} {
		var v any
		err := decodeJSON([]byte(c.in), &v)
		var syn *JSONSyntaxError
		if !errors.As(err, &syn) || syn.Offset != c.off || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want offset %d and %q", c.in, err, c.off, c.want)
		}
		if codeFor(err) != CodeJSONSyntax {
			t.Errorf("%s: code %d", c.in, codeFor(err))
		}
	}
}

type selfPointer *selfPointer

// Types the plans leave to encoding/json decode as it decodes them.
func TestJSONUnusualTargets(t *testing.T) {
	if planFor(reflect.TypeFor[selfPointer]()) != nil {
		t.Error("a pointer to itself has a plan")
	}
	type embedded struct{ A int }
	var v struct {
		embedded
		B json.RawMessage
		C []byte
		D [2]int
		E map[int]string
		F int `json:",string"`
	}
	err := decodeJSON([]byte(`{"A":1,"B":{"x":[1]},"C":"AQI=","D":[3,4],"E":{"5":"five"},"F":"6"}`), &v)
	if err != nil || v.A != 1 || string(v.B) != `{"x":[1]}` || len(v.C) != 2 || v.D != [2]int{3, 4} || v.E[5] != "five" || v.F != 6 {
		t.Fatalf("%v %+v", err, v)
	}
	var x any = new(int)
	if err := decodeJSON([]byte(`7`), &x); err != nil || *x.(*int) != 7 {
		t.Fatalf("%v %v", err, x)
	}
}

func TestJSONExactIntegers(t *testing.T) {
	var v struct {
		U uint64
		I int64
		X any
	}
	if err := decodeJSON([]byte(`{"U":18446744073709551615,"I":-9223372036854775808,"X":18446744073709551615}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.U != 1<<64-1 || v.I != -1<<63 || v.X != json.Number("18446744073709551615") {
		t.Fatalf("%+v", v)
	}
}

// FuzzJSONDecode compares the reader with encoding/json on any input.
func FuzzJSONDecode(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := compareJSON(data); err != nil {
			t.Fatal(err)
		}
		if (validJSON(data) == nil) != json.Valid(data) {
			t.Fatalf("%s: valid %v, encoding/json says %v", data, validJSON(data), json.Valid(data))
		}
	})
}

// BenchmarkJSONDecode compares the reader with what it replaced on the
// fields of a stack round: 57 frame IDs (StackTrace.getContext's
// argument), the 57 frame objects of its reply decoded into a struct, and
// a symbol's properties as an object and into a struct (a client's
// Symbols.getContext, 57 per round).
func BenchmarkJSONDecode(b *testing.B) {
	var ids, frames bytes.Buffer
	ids.WriteByte('[')
	frames.WriteByte('[')
	for i := 0; i < 57; i++ {
		if i > 0 {
			ids.WriteByte(',')
			frames.WriteByte(',')
		}
		fmt.Fprintf(&ids, `"FP%d.P1234.1234"`, i)
		fmt.Fprintf(&frames, `{"ID":"FP%d.P1234.1234","ParentID":"P1234.1234","ProcessID":"P1234","Index":%d,"Level":%d,"TopFrame":false,"Walk":true,"IP":%d,"FP":140737488346112,"RP":93824992235849}`, i, i, 56-i, 93824992235000+i)
	}
	ids.WriteByte(']')
	frames.WriteByte(']')
	props := []byte(`{"ID":"F@P1234@555555555149@0","OwnerID":"P1234","UpdatePolicy":0,"Name":"deep","Class":3,"TypeClass":8,"Address":93824992235849,"Size":64}`)
	cases := []struct {
		name string
		data []byte
		new  func() any
	}{
		{"ids", ids.Bytes(), func() any { return new([]string) }},
		{"frames", frames.Bytes(), func() any { return new([]struct{ IP uint64 }) }},
		{"props", props, func() any { return new(map[string]any) }},
		{"symbol", props, func() any { return new(struct{ Name string }) }},
	}
	for _, c := range cases {
		for _, dec := range []struct {
			name string
			f    func([]byte, any) error
		}{{"tcf", decodeJSON}, {"encoding-json", jsonStd}} {
			b.Run(c.name+"/"+dec.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.data)))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if err := dec.f(c.data, c.new()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// Argument errors keep their codes and positions with the new reader.
func TestArgsJSONErrors(t *testing.T) {
	for _, c := range []struct {
		arg  string
		get  func(a *Args)
		code int
	}{
		{`["a",`, func(a *Args) { a.Strings() }, CodeJSONSyntax},
		{`["a",1]`, func(a *Args) { a.Strings() }, CodeProtocol},
		{`{"a":1`, func(a *Args) { a.Props() }, CodeJSONSyntax},
		{`[1]`, func(a *Args) { a.Props() }, CodeProtocol},
		{`[{"IP":-1}]`, func(a *Args) { var v []struct{ IP uint64 }; a.JSON(&v) }, CodeProtocol},
		{`[{"IP":1}`, func(a *Args) { var v []struct{ IP uint64 }; a.JSON(&v) }, CodeJSONSyntax},
		{`[{"IP":"x"}] x`, func(a *Args) { var v []struct{ IP uint64 }; a.JSON(&v) }, CodeJSONSyntax},
		{`{"a":[}`, func(a *Args) { a.Skip() }, CodeJSONSyntax},
		{`"\q"`, func(a *Args) { _ = a.String() }, CodeJSONSyntax},
		{`{"Code":1,"Time":1.5}`, func(a *Args) { a.Report() }, CodeProtocol},
	} {
		a := NewArgs([]Field{{Data: []byte(`"first"`)}, {Data: []byte(c.arg)}})
		_ = a.String()
		c.get(a)
		var ae *ArgError
		if err := a.End(); !errors.As(err, &ae) || ae.Index != 2 || ae.Code != c.code {
			t.Errorf("%s: %v (%+v), want code %d at argument 2", c.arg, err, ae, c.code)
		}
	}
	var v []struct{ IP uint64 }
	a := NewArgs([]Field{{Data: []byte(`[{"IP":18446744073709551615},{"ip":7,"ID":"x"}]`)}, {Data: []byte(`{"x":[1,{"y":null}]}`)}})
	a.JSON(&v)
	a.Skip()
	if err := a.End(); err != nil || len(v) != 2 || v[0].IP != 1<<64-1 || v[1].IP != 7 {
		t.Fatalf("%v %+v", err, v)
	}
}

// parseUint must agree with strconv.ParseUint on every input it accepts
// as a number, and report range and syntax errors the same way.
func TestParseUintMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "7", "18446744073709551615", "18446744073709551616", "99999999999999999999x",
		"1x", "00", "01", "", "-1", "+1", " 42 ", "184467440737095516150", "1844674407370955161"} {
		got, err := parseUint(Field{Data: []byte(s)})
		want, werr := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		switch {
		case werr == nil && err == nil && got == want:
		case werr != nil && errors.Is(werr, strconv.ErrRange) && err == errOutOfRange:
		case werr != nil && err == errNotInteger:
		case werr == nil && err == errNotInteger && len(strings.TrimSpace(s)) > 1 && strings.TrimSpace(s)[0] == '0':
			// JSON has no leading zeros
		default:
			t.Errorf("%q: %d, %v; strconv: %d, %v", s, got, err, want, werr)
		}
	}
}
