package variables

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FormatOptions select how Format prints a value. The zero value prints as
// gdb's print command does with its default settings (no pretty printers).
type FormatOptions struct {
	// Summary prints only scalars, aggregates as "...": gdb's "set print
	// frame-arguments scalars", the default for a backtrace's arguments.
	Summary bool
	// Elements bounds the characters of a string and the elements of an
	// array printed (gdb's "print elements"; 0: 200); more print "...".
	Elements int
	// Repeats is how many identical consecutive elements print as one
	// "<repeats N times>" (gdb's "print repeats"; 0: 10).
	Repeats int
	// Symbol names the symbol an address points into ("cv+40"), or "" (gdb's
	// "print symbol": pointers print "0x... <cv+40>"). nil: none.
	Symbol func(addr uint64) string
	// Pretty prints library containers (std::map, Rust's HashMap, ...) as
	// gdb's pretty-printers do: "std::map with 2 elements = {[1] = 2, ...}".
	Pretty bool
	// UTF8 prints strings as gdb does when its host charset is UTF-8 (a
	// UTF-8 locale): printable multibyte characters as themselves, not
	// their bytes' octal escapes (see HostUTF8).
	UTF8 bool
}

// HostUTF8 reports whether a locale setting (LC_ALL, else LC_CTYPE, else
// LANG, as setlocale reads them; pass os.Getenv) names a UTF-8 codeset:
// then gdb's host charset is UTF-8.
func HostUTF8(getenv func(string) string) bool {
	v := ""
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v = getenv(k); v != "" {
			break
		}
	}
	v = strings.ToLower(v)
	return strings.Contains(v, "utf-8") || strings.Contains(v, "utf8")
}

// maxFormatDepth bounds nested aggregates; maxFormatLen bounds the text.
const (
	maxFormatDepth = 32
	maxFormatLen   = 64 << 10
)

// Format prints the value v (as Read returned it, with its error) the way
// gdb prints it: integers in decimal, chars as 65 'A', pointers in hex with
// the string they point to (char *) or the symbol they point into, enums by
// name, bool as true/false, floats with gdb's precision, references as
// @0xADDR: value, structs as {a = 1, b = 2}, arrays with <repeats N times>
// and character arrays as strings, bounded by o.Elements. A value that
// cannot be read prints as gdb says it: <optimized out>, or
// <error: Cannot access memory at address 0x...>. f reads what pointers and
// references refer to (nil: nothing is read).
func (r *Reader) Format(v Value, err error, f Frame, o FormatOptions) string {
	if o.Elements <= 0 {
		o.Elements = 200
	}
	if o.Repeats <= 0 {
		o.Repeats = 10
	}
	p := &printer{r: r, f: f, o: o, rust: r != nil && r.isRust(v.Type)}
	if err != nil {
		if o.Summary && errors.Is(err, ErrOptimizedOut) && !IsScalar(v.Type) {
			return "..." // gdb's summary check comes before its validity check
		}
		return errorText(err)
	}
	if v.Place == PlaceImplicitPointer {
		return "<synthetic pointer>"
	}
	p.gaps = v.MissingBits
	p.value(v.Type, v.Bytes, v.Unavailable, 0, v.Address, v.Place == PlaceMemory, 0)
	if v.BitSize > 0 {
		p.b.Reset()
		p.scalar(v.Type, bitField(v), 0)
	}
	return p.b.String()
}

// errorText is how gdb's backtrace prints a value it could not read:
// <optimized out> for values without a location, else
// <error reading variable: MESSAGE>.
func errorText(err error) string {
	if errors.Is(err, ErrOptimizedOut) {
		return "<optimized out>"
	}
	return "<error reading variable: " + ErrorMessage(err) + ">"
}

// ErrorMessage is gdb's wording of why a value could not be read, where gdb
// has one ("Cannot access memory at address 0x10").
func ErrorMessage(err error) string {
	var loop EntryLoopError
	if errors.As(err, &loop) {
		return loop.Error()
	}
	var me *MemoryError
	if errors.As(err, &me) {
		return "Cannot access memory at address 0x" + strconv.FormatUint(me.Addr, 16)
	}
	return err.Error()
}

// IsScalar reports whether gdb prints values of type t in a backtrace's
// argument list (summary mode): anything but arrays, structs, classes and
// unions, references looked through.
func IsScalar(t *Type) bool {
	s := t.Strip()
	for i := 0; s != nil && i < 16 && (s.Kind == KindReference || s.Kind == KindRValueReference); i++ {
		s = s.Elem.Strip()
	}
	if s == nil {
		return true
	}
	switch s.Kind {
	case KindArray, KindStruct, KindClass, KindUnion:
		return false
	}
	return true
}

func bitField(v Value) []byte {
	u, _ := v.Uint()
	if v.Type.IsSigned() && v.BitSize > 0 && v.BitSize < 64 {
		shift := 64 - uint(v.BitSize)
		u = uint64(int64(u<<shift) >> shift)
	}
	size := v.Type.ByteSize()
	if size <= 0 || size > 8 {
		size = 8
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, u)
	return b[:size]
}

type printer struct {
	r *Reader
	f Frame
	o FormatOptions
	b strings.Builder
	// gaps are the top value's missing bit ranges (Value.MissingBits);
	// base arguments below are byte offsets in the top value.
	gaps [][2]uint64
	// rust prints in Rust's syntax (rustformat.go).
	rust bool
}

// missingBits reports whether any bit of [from, to) of the top value is
// missing.
func (p *printer) missingBits(from, to uint64) bool {
	for _, g := range p.gaps {
		if g[0] < to && from < g[1] {
			return true
		}
	}
	return false
}

func (p *printer) full() bool { return p.b.Len() > maxFormatLen }

// value prints bytes b of type t; addr is where they are in memory (inMem).
func (p *printer) value(t *Type, b []byte, unavail []bool, base int64, addr uint64, inMem bool, depth int) {
	if p.full() {
		return
	}
	if depth > maxFormatDepth {
		p.b.WriteString("...")
		return
	}
	s := t.Strip()
	if s != nil && p.r != nil && s.Declaration {
		s = p.r.Complete(s).Strip()
	}
	if p.o.Summary && !IsScalar(s) {
		p.b.WriteString("...")
		return
	}
	if s == nil {
		p.b.WriteString("void")
		return
	}
	size := s.ByteSize()
	if b == nil || size > int64(len(b)) && s.Kind != KindArray {
		p.b.WriteString("<optimized out>")
		return
	}
	if anyUnavailable(unavail, 0, len(b)) && (s.Kind != KindStruct && s.Kind != KindClass && s.Kind != KindUnion && s.Kind != KindArray) {
		p.b.WriteString("<optimized out>")
		return
	}
	switch s.Kind {
	case KindStruct, KindClass, KindUnion:
		if p.o.Pretty && p.f != nil && p.r != nil && unavail == nil {
			place := PlaceComputed
			if inMem {
				place = PlaceMemory
			}
			if c, ok := p.r.Container(Value{Type: s, Bytes: b, Address: addr, Place: place}, p.f); ok && c.GDB {
				p.container(c, depth)
				return
			}
		}
		if p.rust && p.r != nil {
			p.rustAggregate(s, b, unavail, base, addr, inMem, depth)
			return
		}
		p.aggregate(s, b, unavail, base, addr, inMem, depth)
	case KindArray:
		if p.rust {
			p.rustArray(s, b, unavail, base, addr, inMem, depth, false)
			return
		}
		p.array(s, b, unavail, base, addr, inMem, depth)
	case KindReference, KindRValueReference:
		p.reference(s, b, depth)
	default:
		p.scalar(t, b, depth)
	}
}

func anyUnavailable(u []bool, off, n int) bool {
	for i := off; i < off+n && i < len(u); i++ {
		if u[i] {
			return true
		}
	}
	return false
}

func le(b []byte) uint64 {
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

// scalar prints a base type, enum, pointer, member pointer or function.
func (p *printer) scalar(t *Type, b []byte, depth int) {
	s := t.Strip()
	switch s.Kind {
	case KindBase:
		p.base(s, b)
	case KindEnum:
		p.enum(s, b)
	case KindPointer:
		p.pointer(s, le(b), depth)
	case KindFunction:
		p.b.WriteString("{" + t.String() + "}")
	case KindMemberPointer:
		p.memberPointer(s, b)
	default:
		p.b.WriteString(strconv.FormatUint(le(b), 10))
	}
}

func signExtend(u uint64, size int) int64 {
	if size <= 0 || size >= 8 {
		return int64(u)
	}
	shift := 64 - 8*uint(size)
	return int64(u<<shift) >> shift
}

func (p *printer) base(s *Type, b []byte) {
	size := int(s.ByteSize())
	if size == 0 && s.Name == "()" {
		p.b.WriteString("()") // Rust's unit type
		return
	}
	if size > len(b) || size <= 0 {
		size = len(b)
	}
	switch s.Encoding {
	case EncFloat:
		p.b.WriteString(formatFloat(b[:size]))
		return
	case EncComplexFloat:
		h := size / 2
		p.b.WriteString(formatFloat(b[:h]) + " + " + formatFloat(b[h:size]) + "i")
		return
	}
	if size > 8 {
		// __int128: gdb prints it in decimal too.
		n := new(big.Int).SetBytes(reverse(b[:size]))
		if s.Encoding.Signed() && b[size-1]&0x80 != 0 {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*size)))
		}
		p.b.WriteString(n.String())
		return
	}
	u := le(b[:size])
	if size < 8 {
		u &= 1<<(8*uint(size)) - 1
	}
	switch s.Encoding {
	case EncBoolean:
		switch u {
		case 0:
			p.b.WriteString("false")
		case 1:
			p.b.WriteString("true")
		default:
			p.b.WriteString(strconv.FormatUint(u, 10))
		}
	case EncSignedChar, EncUnsignedChar:
		if s.Encoding == EncSignedChar {
			p.b.WriteString(strconv.FormatInt(signExtend(u, size), 10))
		} else {
			p.b.WriteString(strconv.FormatUint(u, 10))
		}
		if size == 1 {
			p.b.WriteString(" '")
			p.b.WriteString(escapeChar(byte(u), '\''))
			p.b.WriteByte('\'')
		}
	case EncUTF:
		p.b.WriteString(strconv.FormatUint(u, 10))
		prefix := map[int]string{1: "u8", 2: "u", 4: "U"}[size]
		if p.rust {
			prefix = "" // Rust's char
		}
		p.b.WriteString(" " + prefix + "'")
		if u < 0x80 {
			p.b.WriteString(escapeChar(byte(u), '\''))
		} else if u < 0x110000 && (u < 0xd800 || u > 0xdfff) {
			p.b.WriteRune(rune(u))
		} else {
			p.b.WriteString(`\x` + strconv.FormatUint(u, 16))
		}
		p.b.WriteByte('\'')
	case EncSigned:
		p.b.WriteString(strconv.FormatInt(signExtend(u, size), 10))
	default:
		if s.IsSigned() {
			p.b.WriteString(strconv.FormatInt(signExtend(u, size), 10))
		} else {
			p.b.WriteString(strconv.FormatUint(u, 10))
		}
	}
}

func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out
}

// formatFloat prints a float as gdb does: %g with the digits that make the
// value round-trip for its format (9 for float, 17 for double, 21 for x87
// long double).
func formatFloat(b []byte) string {
	switch len(b) {
	case 4:
		return cFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 9)
	case 8:
		return cFloat(math.Float64frombits(binary.LittleEndian.Uint64(b)), 17)
	case 10, 12, 16:
		return x87Text(b[:10])
	}
	return "<invalid float value>"
}

// cFloat is C's printf("%.*g", prec, v), with gdb's spelling of infinities
// and NaNs.
func cFloat(v float64, prec int) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		bits := math.Float64bits(v)
		sign := ""
		if bits>>63 != 0 {
			sign = "-"
		}
		return sign + "nan(0x" + strconv.FormatUint(bits&(1<<52-1), 16) + ")"
	}
	return cG(strconv.FormatFloat(v, 'e', prec-1, 64), prec)
}

// cG turns Go's %.*e text (d.ddde±XX) into C's %.*g.
func cG(e string, prec int) string {
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if exp < -4 || exp >= prec {
		m := digits[:1]
		if frac := strings.TrimRight(digits[1:], "0"); frac != "" {
			m += "." + frac
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		es := strconv.Itoa(exp)
		if len(es) < 2 {
			es = "0" + es
		}
		out = m + "e" + sign + es
	} else if exp >= 0 {
		intPart := digits[:exp+1]
		frac := strings.TrimRight(digits[exp+1:], "0")
		out = intPart
		if frac != "" {
			out += "." + frac
		}
	} else {
		frac := strings.TrimRight(strings.Repeat("0", -exp-1)+digits, "0")
		out = "0." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// x87Text prints an 80-bit extended value with 21 significant digits.
func x87Text(b []byte) string {
	mant := binary.LittleEndian.Uint64(b[:8])
	se := binary.LittleEndian.Uint16(b[8:10])
	neg := se&0x8000 != 0
	exp := int(se & 0x7fff)
	sign := ""
	if neg {
		sign = "-"
	}
	if exp != 0 && mant>>63 == 0 {
		// An unnormal, pseudo-infinity or pseudo-NaN: the explicit
		// integer bit clear where the exponent says it is set. The FPU
		// refuses it; gdb prints it so (found in the sixth real-program
		// trial: a union's long double member over a pointer).
		return "<invalid float value>"
	}
	if exp == 0x7fff {
		if mant<<1 == 0 {
			return sign + "inf"
		}
		return sign + "nan(0x" + strconv.FormatUint(mant&(1<<63-1), 16) + ")"
	}
	if mant == 0 {
		if neg {
			return "-0"
		}
		return "0"
	}
	f := new(big.Float).SetPrec(64).SetUint64(mant)
	if exp == 0 {
		exp = 1 // denormal
	}
	f.SetMantExp(f, exp-16383-63)
	if neg {
		f.Neg(f)
	}
	return cG(f.Text('e', 20), 21)
}

func (p *printer) enum(s *Type, b []byte) {
	size := int(s.ByteSize())
	if size <= 0 || size > len(b) {
		size = len(b)
	}
	u := le(b[:min(size, 8)])
	n := int64(u)
	if s.IsSigned() || s.Encoding == 0 {
		n = signExtend(u, size)
	}
	for _, e := range s.Enumerators {
		if e.Value == n {
			p.b.WriteString(qualifiedEnumerator(p.r.enumeratorPrefix(s), e.Name))
			return
		}
	}
	// A flag enum (every enumerator a disjoint set of bits) prints as the
	// flags it holds, as gdb does.
	if flagEnum(s) && n > 0 {
		var parts []string
		rest := uint64(n)
		for _, e := range s.Enumerators {
			if e.Value != 0 && rest&uint64(e.Value) == uint64(e.Value) {
				parts = append(parts, qualifiedEnumerator(p.r.enumeratorPrefix(s), e.Name))
				rest &^= uint64(e.Value)
			}
		}
		if len(parts) > 0 {
			if rest != 0 {
				parts = append(parts, "unknown: 0x"+strconv.FormatUint(rest, 16))
			}
			p.b.WriteString("(" + strings.Join(parts, " | ") + ")")
			return
		}
	}
	p.b.WriteString(strconv.FormatInt(n, 10))
}

func flagEnum(s *Type) bool {
	var seen uint64
	for _, e := range s.Enumerators {
		if e.Value < 0 {
			return false
		}
		v := uint64(e.Value)
		if v == 0 {
			continue
		}
		if v&seen != 0 {
			return false
		}
		seen |= v
	}
	return len(s.Enumerators) > 0
}

// textual reports whether elements of type t print as characters (gdb's
// c_textual_element_type: char, signed and unsigned char, and their
// typedefs).
func textual(t *Type) bool {
	s := t.Strip()
	return s != nil && s.Kind == KindBase && s.ByteSize() == 1 &&
		(s.Encoding == EncSignedChar || s.Encoding == EncUnsignedChar)
}

func (p *printer) pointer(s *Type, addr uint64, depth int) {
	p.b.WriteString("0x" + strconv.FormatUint(addr, 16))
	elem := s.Elem.Strip()
	if elem != nil && elem.Kind == KindFunction {
		if sym := p.symbol(addr); sym != "" {
			p.b.WriteString(" <" + sym + ">")
		}
		return
	}
	if addr == 0 {
		return
	}
	if sym := p.symbol(addr); sym != "" {
		p.b.WriteString(" <" + sym + ">")
	}
	if elem != nil && textual(elem) && p.f != nil && !p.rust {
		p.b.WriteByte(' ')
		p.cString(addr)
	}
}

func (p *printer) symbol(addr uint64) string {
	if p.o.Symbol == nil {
		return ""
	}
	return p.o.Symbol(addr)
}

// cString prints the NUL-terminated string at addr, at most o.Elements
// characters (gdb's val_print_string).
func (p *printer) cString(addr uint64) {
	limit := p.o.Elements
	buf := make([]byte, limit+1)
	n := 0
	found := false
	// Read in chunks that do not cross a page: the string may end just
	// before unmapped memory.
	for n < len(buf) && !found {
		chunk := min(len(buf)-n, 4096-int((addr+uint64(n))&4095))
		got, _ := p.f.ReadMemory(buf[n:n+chunk], addr+uint64(n))
		if i := strings.IndexByte(string(buf[n:n+got]), 0); i >= 0 {
			n += i
			found = true
			break
		}
		n += got
		if got < chunk {
			if n == 0 {
				p.b.WriteString("<error: Cannot access memory at address 0x" + strconv.FormatUint(addr, 16) + ">")
				return
			}
			p.printStr(buf[:n], false)
			p.b.WriteString("<error: Cannot access memory at address 0x" + strconv.FormatUint(addr+uint64(n), 16) + ">")
			return
		}
	}
	force := false
	if !found && n > limit {
		n = limit
		force = true // the 201st character is not the end
	}
	p.printStr(buf[:n], force)
}

// printStr prints characters as gdb's generic_printstr does: runs longer
// than the repeat threshold as 'c' <repeats N times>, the rest in double
// quotes, at most o.Elements characters, "..." when cut (or force). With
// o.UTF8 (gdb's host charset in a UTF-8 locale) a printable multibyte
// character prints as itself, bytes that are no character as octal
// escapes, and a sequence cut short by the string's end after the quotes as
// <incomplete sequence \321>; otherwise every byte above 0x7e is escaped.
func (p *printer) printStr(s []byte, force bool) {
	if len(s) == 0 {
		p.b.WriteString(`""`)
		if force {
			p.b.WriteString("...")
		}
		return
	}
	units := strUnits(s, p.o.UTF8)
	type run struct {
		u strUnit
		n int
	}
	var runs []run
	printed := 0
	i := 0
	for i < len(units) && printed < p.o.Elements {
		j := i + 1
		for j < len(units) && units[j].same(units[i]) {
			j++
		}
		runs = append(runs, run{units[i], j - i})
		printed += j - i
		i = j
	}
	finished := i >= len(units)
	inQuote := false
	first := true
	for _, r := range runs {
		switch {
		case r.u.incomplete:
			if inQuote {
				p.b.WriteString(`", `)
				inQuote = false
			} else if !first {
				p.b.WriteString(", ")
			}
			p.b.WriteString("<incomplete sequence ")
			for _, c := range r.u.b {
				p.b.WriteString(octalEscape(c))
			}
			p.b.WriteByte('>')
		case r.n > p.o.Repeats:
			if inQuote {
				p.b.WriteString(`", `)
				inQuote = false
			} else if !first {
				p.b.WriteString(", ")
			}
			p.b.WriteString("'" + r.u.spell('\'') + "' <repeats " + strconv.Itoa(r.n) + " times>")
		default:
			if !inQuote {
				if !first {
					p.b.WriteString(", ")
				}
				p.b.WriteByte('"')
				inQuote = true
			}
			for k := 0; k < r.n; k++ {
				p.b.WriteString(r.u.spell('"'))
			}
		}
		first = false
	}
	if inQuote {
		p.b.WriteByte('"')
	}
	if force || !finished {
		p.b.WriteString("...")
	}
}

// strUnit is one character of a string as gdb iterates over it: a byte, a
// printable UTF-8 character (raw), or a multibyte sequence cut short by
// the end of the string (incomplete).
type strUnit struct {
	b          []byte
	raw        bool
	incomplete bool
}

func (u strUnit) same(v strUnit) bool {
	return u.raw == v.raw && u.incomplete == v.incomplete && string(u.b) == string(v.b)
}

// spell writes the unit inside quote q.
func (u strUnit) spell(q byte) string {
	if u.raw {
		return string(u.b)
	}
	return escapeChar(u.b[0], q)
}

// strUnits cuts s into the characters printStr prints: bytes, or with
// utf8 the host charset's characters (invalid bytes one by one).
func strUnits(s []byte, utf8Host bool) []strUnit {
	out := make([]strUnit, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if !utf8Host || c < utf8.RuneSelf {
			out = append(out, strUnit{b: s[i : i+1]})
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1 && !utf8.FullRune(s[i:]):
			out = append(out, strUnit{b: s[i:], incomplete: true})
			i = len(s)
		case r == utf8.RuneError && size <= 1, !unicode.IsPrint(r):
			for k := 0; k < max(size, 1); k++ {
				out = append(out, strUnit{b: s[i+k : i+k+1]})
			}
			i += max(size, 1)
		default:
			out = append(out, strUnit{b: s[i : i+size], raw: true})
			i += size
		}
	}
	return out
}

// octalEscape is c as a three-digit octal escape.
func octalEscape(c byte) string {
	o := strconv.FormatUint(uint64(c), 8)
	return `\` + strings.Repeat("0", 3-len(o)) + o
}

// escapeChar spells one character as gdb does inside quote q (octal
// escapes always have three digits, so a digit after one stays a digit).
func escapeChar(c byte, q byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	case 033:
		return `\033`
	case '\\':
		return `\\`
	}
	if c == q {
		return `\` + string(c)
	}
	if c >= 0x20 && c < 0x7f {
		return string(c)
	}
	o := strconv.FormatUint(uint64(c), 8)
	return `\` + strings.Repeat("0", 3-len(o)) + o
}

func (p *printer) reference(s *Type, b []byte, depth int) {
	addr := le(b)
	at := "@0x" + strconv.FormatUint(addr, 16)
	elem := s.Elem
	if p.f == nil || elem == nil {
		p.b.WriteString(at)
		return
	}
	es := elem.Strip()
	if es != nil && es.Declaration && p.r != nil {
		elem = p.r.Complete(elem)
	}
	size := elem.ByteSize()
	if size < 0 || size > MaxValueSize {
		p.b.WriteString(at + ": <error: size of " + elem.String() + " is unknown>")
		return
	}
	buf := make([]byte, size)
	if n, _ := p.f.ReadMemory(buf, addr); n < len(buf) {
		p.b.WriteString(at + ": <error: Cannot access memory at address 0x" + strconv.FormatUint(addr+uint64(n), 16) + ">")
		return
	}
	// gdb's library printers look through references (libstdc++'s lookup
	// takes a reference's target type): a reference to a string or a
	// container prints as the container, without the address.
	// An rvalue reference keeps its address (libstdc++'s lookup strips
	// only lvalue references: gdb prints vals = @0x7ffe...: std::vector
	// of length 3 for a std::vector<int> &&).
	if es := elem.Strip(); s.Kind == KindReference && p.o.Pretty && p.r != nil && es != nil && (es.Kind == KindStruct || es.Kind == KindClass || es.Kind == KindUnion) {
		if c, ok := p.r.Container(Value{Type: es, Bytes: buf, Address: addr, Place: PlaceMemory}, p.f); ok && c.GDB {
			p.container(c, depth+1)
			return
		}
	}
	p.b.WriteString(at + ": ")
	p.value(elem, buf, nil, 0, addr, true, depth+1)
}

func (p *printer) aggregate(s *Type, b []byte, unavail []bool, base int64, addr uint64, inMem bool, depth int) {
	p.b.WriteByte('{')
	n, data := 0, 0
	for _, fl := range s.Fields {
		if fl.OffsetExpr != nil || fl.Type == nil {
			continue
		}
		if n > 0 {
			p.b.WriteString(", ")
		}
		n++
		if fl.Base {
			name := fl.Type.Strip().Name
			if p.r != nil {
				name = p.r.QualifiedName(fl.Type.Strip())
			}
			p.b.WriteString("<" + name + "> = ")
		} else {
			data++
		}
		if !fl.Base && fl.Name != "" {
			p.b.WriteString(fl.Name + " = ")
		}
		ft := fl.Type
		if st := ft.Strip(); st != nil && st.Declaration && p.r != nil {
			// A base class this unit only declares (GCC describes a class
			// with a key function in the unit defining that function):
			// the definition another unit gives, as gdb prints it.
			ft = p.r.Complete(ft)
		}
		size := ft.ByteSize()
		if fl.BitSize > 0 {
			start := fl.BitOffset / 8
			end := (fl.BitOffset + fl.BitSize + 7) / 8
			from := uint64(8*base + fl.BitOffset)
			if end > int64(len(b)) || unavail != nil && p.gaps == nil && anyUnavailable(unavail, int(start), int(end-start)) ||
				p.missingBits(from, from+uint64(fl.BitSize)) {
				p.b.WriteString("<optimized out>")
				continue
			}
			v := Value{Type: fl.Type, Bytes: b[start:end], BitOffset: fl.BitOffset - 8*start, BitSize: fl.BitSize}
			p.scalar(fl.Type, bitField(v), depth+1)
			continue
		}
		if fl.Offset < 0 || size < 0 || fl.Offset+size > int64(len(b)) {
			p.b.WriteString("<optimized out>")
			continue
		}
		var u []bool
		if unavail != nil {
			u = unavail[fl.Offset : fl.Offset+size]
		}
		if rt := fl.Type.Strip(); rt != nil && (rt.Kind == KindReference || rt.Kind == KindRValueReference) && size == 8 && !anyUnavailable(u, 0, 8) {
			// A reference member prints as its address only, as gdb's
			// print does (it does not follow references inside a value:
			// limit = @0x7ffe...); the member's own line follows it.
			p.b.WriteString("@0x" + strconv.FormatUint(le(b[fl.Offset:fl.Offset+size]), 16))
			continue
		}
		p.value(ft, b[fl.Offset:fl.Offset+size], u, base+fl.Offset, addr+uint64(fl.Offset), inMem, depth+1)
		if p.full() {
			break
		}
	}
	if data == 0 {
		// gdb: the base classes, then this.
		if n > 0 {
			p.b.WriteString(", ")
		}
		p.b.WriteString("<No data fields>")
	}
	p.b.WriteByte('}')
}

func (p *printer) array(s *Type, b []byte, unavail []bool, base int64, addr uint64, inMem bool, depth int) {
	esize := s.Elem.ByteSize()
	count := s.Count
	if count < 0 || esize <= 0 {
		// gdb prints a flexible array member as 0x... (its address) only
		// with print address; an unknown length prints nothing.
		p.b.WriteString("0x" + strconv.FormatUint(addr, 16))
		return
	}
	if count > int64(len(b))/esize {
		count = int64(len(b)) / esize
	}
	if textual(s.Elem) && !anyUnavailable(unavail, 0, len(b)) {
		n := int(count)
		// Trailing NUL dropped as gdb does (when the string is not cut).
		tempLen := 0
		for tempLen < n && tempLen < p.o.Elements && b[tempLen] != 0 {
			tempLen++
		}
		force := false
		if tempLen == p.o.Elements && tempLen < n && b[tempLen] != 0 {
			force = true
		}
		str := b[:n]
		if !force && n > 0 && str[n-1] == 0 {
			str = str[:n-1]
		}
		p.printStr(str, force)
		return
	}
	p.b.WriteByte('{')
	printed := 0
	for i := int64(0); i < count; {
		if printed >= p.o.Elements {
			p.b.WriteString("...")
			break
		}
		elem := b[i*esize : (i+1)*esize]
		var u []bool
		if unavail != nil {
			u = unavail[i*esize : (i+1)*esize]
		}
		// Count the repeats of this element.
		j := i + 1
		for j < count && string(b[j*esize:(j+1)*esize]) == string(elem) && (unavail == nil || !anyUnavailable(unavail, int(j*esize), int(esize)) && !anyUnavailable(u, 0, len(u))) {
			j++
		}
		if i > 0 {
			p.b.WriteString(", ")
		}
		reps := j - i
		if reps > int64(p.o.Repeats) {
			p.value(s.Elem, elem, u, base+i*esize, addr+uint64(i*esize), inMem, depth+1)
			p.b.WriteString(" <repeats " + strconv.FormatInt(reps, 10) + " times>")
			i = j
			printed += p.o.Repeats
		} else {
			p.value(s.Elem, elem, u, base+i*esize, addr+uint64(i*esize), inMem, depth+1)
			i++
			printed++
		}
		if p.full() {
			break
		}
	}
	p.b.WriteByte('}')
}
