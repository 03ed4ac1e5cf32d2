package tcf

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

// decodeJSON decodes one JSON value into v with the semantics of
// encoding/json's Decoder with UseNumber (numbers exact as json.Number in
// interfaces, the first type mismatch reported after the value was read,
// case-insensitive struct field names), rejecting anything after the value.
//
// Common targets are decoded by hand; other types through a per-type plan
// built once with reflection. Types the plan does not cover (custom
// unmarshalers, embedded structs, ",string" fields, arrays, []byte,
// non-string map keys...) go to encoding/json itself.
func decodeJSON(data []byte, v any) error {
	p := jsonParser{data: data}
	var err error
	switch x := v.(type) {
	case *[]string:
		if *x != nil {
			return decodeReflect(&p, v)
		}
		*x, err = p.stringList()
	case *map[string]any:
		err = p.objectFast(x)
	case *Props:
		err = p.objectFast((*map[string]any)(x))
	case *any:
		if *x != nil {
			return decodeReflect(&p, v)
		}
		*x, err = p.anyValue()
	default:
		return decodeReflect(&p, v)
	}
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return err
	}
	return p.typeErr
}

func decodeReflect(p *jsonParser, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return decodeStd(p.data, v)
	}
	pl := planFor(rv.Type().Elem())
	if pl == nil {
		return decodeStd(p.data, v)
	}
	err := p.decodeInto(rv.Elem(), pl)
	if err == errFallback {
		return decodeStd(p.data, v)
	}
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return err
	}
	return p.typeErr
}

// errFallback makes decodeJSON hand the value to encoding/json (a case the
// plans do not model, found while decoding).
var errFallback = errors.New("tcf: JSON target needs encoding/json")

// decodeStd decodes with encoding/json, numbers exact in interfaces.
func decodeStd(data []byte, v any) error {
	if err := validJSON(data); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// stringList consumes an array of strings (or null, giving nil). Elements
// of another type are mismatches and stay "" (null elements too). The
// strings share one allocation.
func (p *jsonParser) stringList() ([]string, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.unexpected("looking for beginning of value")
	}
	switch p.data[p.pos] {
	case 'n':
		return nil, p.literal("null")
	case '[':
	default:
		p.mismatchValue(stringsType)
		return nil, p.skipValue()
	}
	if err := p.open(); err != nil {
		return nil, err
	}
	text := make([]byte, 0, len(p.data)-p.pos) // every string, one after the other
	var ends [16]int
	end := ends[:0]
	for first := true; ; first = false {
		ok, err := p.more(first, ']')
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == '"' {
			var body []byte
			var raw bool
			if body, raw, err = p.scanString(); err == nil {
				if raw {
					text = append(text, body...)
				} else {
					text = appendUnquoted(text, body)
				}
			}
		} else {
			if p.pos < len(p.data) && p.data[p.pos] != 'n' {
				p.mismatchValue(stringType)
			}
			err = p.skipValue()
		}
		if err != nil {
			return nil, err
		}
		end = append(end, len(text))
	}
	all := string(text)
	l := make([]string, len(end))
	start := 0
	for i, e := range end {
		l[i] = all[start:e]
		start = e
	}
	return l, nil
}

// objectFast consumes an object into *m (made when nil), or null (giving a
// nil map).
func (p *jsonParser) objectFast(m *map[string]any) error {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return p.unexpected("looking for beginning of value")
	}
	switch p.data[p.pos] {
	case 'n':
		*m = nil
		return p.literal("null")
	case '{':
	default:
		p.mismatchValue(propsType)
		return p.skipValue()
	}
	if *m == nil {
		*m = map[string]any{}
	}
	return p.objectInto(*m)
}

// mismatchValue remembers a mismatch named after the value at pos.
func (p *jsonParser) mismatchValue(t reflect.Type) {
	what := "number"
	switch p.data[p.pos] {
	case '"':
		what = "string"
	case '[':
		what = "array"
	case '{':
		what = "object"
	case 't', 'f':
		what = "bool"
	}
	p.mismatch(what, t)
}

var (
	stringType  = reflect.TypeFor[string]()
	stringsType = reflect.TypeFor[[]string]()
	propsType   = reflect.TypeFor[map[string]any]()
)

// decPlan says how to decode into one Go type.
type decPlan struct {
	typ    reflect.Type
	kind   reflect.Kind
	elem   *decPlan   // pointer, slice and map element
	fields []decField // struct
	// When every field name is ASCII (asciiNames), an ASCII key names a
	// field only if its length is in lengths and its first byte, folded, in
	// firsts: most keys of an agent's objects are not wanted, and this
	// tells them at once.
	asciiNames bool
	lengths    uint64    // bit n: a name of n bytes (names of 64 or more: bit 63)
	firsts     [4]uint64 // bit c: a name begins with byte c (both cases of a letter)
}

type decField struct {
	name  []byte // the JSON name
	ascii bool   // name is all ASCII
	index int
	plan  *decPlan
}

var plans sync.Map // reflect.Type -> *decPlan, or nil when unsupported

// planFor returns the decoding plan of t, or nil when t needs encoding/json.
func planFor(t reflect.Type) *decPlan {
	if v, ok := plans.Load(t); ok {
		return v.(*decPlan)
	}
	b := planBuilder{seen: map[reflect.Type]*decPlan{}}
	pl := b.build(t)
	if !b.ok {
		pl = nil
	}
	plans.Store(t, pl)
	return pl
}

type planBuilder struct {
	seen map[reflect.Type]*decPlan
	ok   bool
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

func (b *planBuilder) build(t reflect.Type) *decPlan {
	if pl := b.seen[t]; pl != nil {
		return pl // a recursive type: the plan is being built
	}
	if len(b.seen) == 0 {
		b.ok = true
	}
	pl := &decPlan{typ: t, kind: t.Kind()}
	b.seen[t] = pl
	if t.Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) ||
		t == numberType {
		b.ok = false
		return pl
	}
	switch pl.kind {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
	case reflect.Interface:
		if t.NumMethod() != 0 {
			b.ok = false
		}
	case reflect.Pointer:
		// A pointer type that points to itself (type P *P) would make
		// decoding allocate forever without reading input.
		for e, i := t.Elem(), 0; e.Kind() == reflect.Pointer && i < 64; e, i = e.Elem(), i+1 {
			if e == t {
				b.ok = false
				return pl
			}
		}
		pl.elem = b.build(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // []byte is base64
			b.ok = false
		}
		pl.elem = b.build(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key().Implements(textUnmarshalerType) ||
			reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
			b.ok = false
		}
		pl.elem = b.build(t.Elem())
	case reflect.Struct:
		b.buildFields(pl)
	default:
		b.ok = false
	}
	return pl
}

// buildFields lists a struct's JSON fields as encoding/json names them. Cases
// where its rules get intricate (embedded fields, two fields with one name,
// ",string") are left to it.
func (b *planBuilder) buildFields(pl *decPlan) {
	t := pl.typ
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous {
			b.ok = false
			return
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := cutByte(tag, ',')
		for opts != "" {
			var opt string
			opt, opts, _ = cutByte(opts, ',')
			if opt == "string" {
				b.ok = false
				return
			}
		}
		if !validTagName(name) {
			name = sf.Name
		}
		if names[name] {
			b.ok = false
			return
		}
		names[name] = true
		pl.fields = append(pl.fields, decField{
			name:  []byte(name),
			ascii: isASCII(name),
			index: i,
			plan:  b.build(sf.Type),
		})
	}
	pl.asciiNames = true
	for _, f := range pl.fields {
		if !f.ascii {
			pl.asciiNames = false
		}
		pl.lengths |= 1 << min(len(f.name), 63)
		c := f.name[0]
		pl.firsts[c/64] |= 1 << (c % 64)
		if isLetter(c) {
			c ^= 0x20
			pl.firsts[c/64] |= 1 << (c % 64)
		}
	}
}

// cannotName reports that the ASCII key names no field (see asciiNames).
func (pl *decPlan) cannotName(key []byte) bool {
	if len(key) == 0 {
		return true
	}
	c := key[0]
	return pl.lengths&(1<<min(len(key), 63)) == 0 || pl.firsts[c/64]&(1<<(c%64)) == 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func cutByte(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// validTagName is encoding/json's rule for names in struct tags.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case bytes.ContainsRune([]byte("!#$%&()*+-./:;<=>?@[]^_{|}~ "), c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// decodeInto consumes a value into v following pl.
func (p *jsonParser) decodeInto(v reflect.Value, pl *decPlan) error {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return p.unexpected("looking for beginning of value")
	}
	c := p.data[p.pos]
	if c == 'n' {
		if err := p.literal("null"); err != nil {
			return err
		}
		switch pl.kind {
		case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
			v.SetZero()
		}
		return nil
	}
	switch pl.kind {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(pl.typ.Elem()))
		}
		return p.decodeInto(v.Elem(), pl.elem)
	case reflect.Interface:
		if !v.IsNil() {
			if e := v.Elem(); e.Kind() == reflect.Pointer && !e.IsNil() {
				return errFallback // encoding/json decodes into what it points to
			}
		}
		x, err := p.anyValue()
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(x))
		return nil
	}
	switch c {
	case '{':
		switch pl.kind {
		case reflect.Struct:
			return p.decodeStruct(v, pl)
		case reflect.Map:
			return p.decodeMap(v, pl)
		}
	case '[':
		if pl.kind == reflect.Slice {
			return p.decodeSlice(v, pl)
		}
	case '"':
		if pl.kind == reflect.String {
			s, err := p.stringValue()
			v.SetString(s)
			return err
		}
	case 't', 'f':
		if pl.kind == reflect.Bool {
			v.SetBool(c == 't')
			if c == 't' {
				return p.literal("true")
			}
			return p.literal("false")
		}
	default:
		if c == '-' || isDigit(c) {
			return p.decodeNumber(v, pl)
		}
		return p.unexpected("looking for beginning of value")
	}
	p.mismatchValue(pl.typ)
	return p.skipValue()
}

func (p *jsonParser) decodeNumber(v reflect.Value, pl *decPlan) error {
	at := p.pos
	text, err := p.scanNumber()
	if err != nil {
		return err
	}
	ok := true
	switch pl.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(string(text), 10, 64)
		if ok = err == nil && !v.OverflowInt(n); ok {
			v.SetInt(n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := parseUint(Field{Data: text})
		if ok = err == nil && !v.OverflowUint(n); ok {
			v.SetUint(n)
		}
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(string(text), pl.typ.Bits())
		if ok = err == nil && !v.OverflowFloat(n); ok {
			v.SetFloat(n)
		}
	default:
		if p.typeErr == nil {
			p.typeErr = &json.UnmarshalTypeError{Value: "number", Type: pl.typ, Offset: int64(at)}
		}
		return nil
	}
	if !ok && p.typeErr == nil {
		p.typeErr = &json.UnmarshalTypeError{Value: "number " + string(text), Type: pl.typ, Offset: int64(at)}
	}
	return nil
}

// decodeSlice fills a slice the way encoding/json does: elements decoded
// into the slice's own backing array, its length set to the count.
func (p *jsonParser) decodeSlice(v reflect.Value, pl *decPlan) error {
	if err := p.open(); err != nil {
		return err
	}
	i := 0
	for first := true; ; first = false {
		ok, err := p.more(first, ']')
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if i >= v.Cap() {
			v.Grow(1)
		}
		if i >= v.Len() {
			v.SetLen(i + 1)
		}
		if err := p.decodeInto(v.Index(i), pl.elem); err != nil {
			return err
		}
		i++
	}
	if i < v.Len() {
		v.SetLen(i)
	}
	if i == 0 {
		v.Set(reflect.MakeSlice(pl.typ, 0, 0))
	}
	return nil
}

func (p *jsonParser) decodeMap(v reflect.Value, pl *decPlan) error {
	if err := p.open(); err != nil {
		return err
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(pl.typ))
	}
	kt := pl.typ.Key()
	for first := true; ; first = false {
		ok, err := p.more(first, '}')
		if err != nil || !ok {
			return err
		}
		k, err := p.key()
		if err != nil {
			return err
		}
		kv := reflect.New(kt).Elem()
		kv.SetString(string(k))
		ev := reflect.New(pl.elem.typ).Elem()
		if err := p.decodeInto(ev, pl.elem); err != nil {
			return err
		}
		v.SetMapIndex(kv, ev)
	}
}

func (p *jsonParser) decodeStruct(v reflect.Value, pl *decPlan) error {
	if err := p.open(); err != nil {
		return err
	}
	for first := true; ; first = false {
		// The members of a compact object (what agents send: no spaces,
		// plain keys) are read here without the general calls; anything
		// else takes them.
		k, ascii, ok := p.compactKey(first)
		if !ok {
			more, err := p.more(first, '}')
			if err != nil || !more {
				return err
			}
			if k, ascii, err = p.keyASCII(); err != nil {
				return err
			}
		} else if k == nil {
			return nil // the closing brace
		}
		f := pl.field(k, ascii)
		var err error
		if f == nil {
			err = p.skipCompact()
		} else {
			err = p.decodeInto(v.Field(f.index), f.plan)
		}
		if err != nil {
			return err
		}
	}
}

// compactKey reads, at pos, the closing brace of an object (k nil) or the
// start of a member — a comma unless first, a key of plain ASCII
// characters and the colon — when they come without spaces or escapes. ok
// false means it consumed nothing: the general path reads what is there.
func (p *jsonParser) compactKey(first bool) (k []byte, ascii, ok bool) {
	d, i := p.data, p.pos
	if i >= len(d) {
		return nil, false, false
	}
	switch d[i] {
	case '}':
		p.pos = i + 1
		p.depth--
		return nil, false, true
	case ',':
		if first {
			return nil, false, false
		}
		i++
	default:
		if !first {
			return nil, false, false
		}
	}
	if i >= len(d) || d[i] != '"' {
		return nil, false, false
	}
	j := i + 1
	for j < len(d) && plainString[d[j]] {
		j++
	}
	if j+1 >= len(d) || d[j] != '"' || d[j+1] != ':' {
		return nil, false, false
	}
	p.pos = j + 2
	return d[i+1 : j], true, true
}

// skipCompact consumes a value, strings and plain integers without the
// general calls.
func (p *jsonParser) skipCompact() error {
	d, i := p.data, p.pos
	if i < len(d) {
		switch c := d[i]; {
		case c == '"':
			j := i + 1
			for j < len(d) && plainString[d[j]] {
				j++
			}
			if j < len(d) && d[j] == '"' {
				p.pos = j + 1
				return nil
			}
		case '1' <= c && c <= '9':
			j := i + 1
			for j < len(d) && isDigit(d[j]) {
				j++
			}
			if j < len(d) && (d[j] == ',' || d[j] == '}' || d[j] == ']') {
				p.pos = j
				return nil
			}
		}
	}
	return p.skipValue()
}

// field finds the field named key: exactly, else the first one equal under
// Unicode case folding (encoding/json's rule). ascii says key is all ASCII.
func (pl *decPlan) field(key []byte, ascii bool) *decField {
	if ascii && pl.asciiNames && pl.cannotName(key) {
		return nil
	}
	for i := range pl.fields {
		if string(pl.fields[i].name) == string(key) {
			return &pl.fields[i]
		}
	}
	for i := range pl.fields {
		f := &pl.fields[i]
		if ascii && f.ascii {
			// An ASCII key folds only to ASCII names of its length (a
			// non-ASCII name can fold to ASCII: the Kelvin sign to k),
			// and most keys of other fields differ in their first letter.
			if len(f.name) != len(key) || (f.name[0]|0x20 != key[0]|0x20 && isLetter(key[0])) ||
				(f.name[0] != key[0] && !isLetter(key[0])) {
				continue
			}
		}
		if bytes.EqualFold(f.name, key) {
			return f
		}
	}
	return nil
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
