// Package jsonstr writes Go strings as JSON strings, byte for byte as
// encoding/json writes them, without its reflection or its second pass: the
// one escaper of sonde's two hand-made protocol encoders (tcf's replies and
// events, dap's stackTrace responses).
//
// The two protocols differ in one thing: HTML escaping. TCF's peers (the C
// agent, Eclipse) write <, > and & as they are, and tcf's golden tests pin
// that, so tcf uses Append (encoding/json's SetEscapeHTML(false)). Every
// other DAP message goes through json.Marshal, which writes them as \u003c,
// \u003e and \u0026; dap's stackTrace encoder promises json.Marshal's bytes
// (so a client, or a transcript, sees one encoding), so dap uses
// AppendHTMLEscaped. Both are valid JSON for either protocol's readers.
package jsonstr

import "unicode/utf8"

// Append appends s as a JSON string as encoding/json writes it without HTML
// escaping: control characters as \u00XX (or \n, \t, \b, \f, \r), invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped. The output never holds a byte
// below 0x20 (so never TCF's escape byte 0x03 or a NUL).
func Append(dst []byte, s string) []byte {
	return appendString(dst, s, &plain, plainPrefix(s))
}

// AppendHTMLEscaped appends s as json.Marshal writes it: as Append, and <,
// > and & as \u003c, \u003e and \u0026.
func AppendHTMLEscaped(dst []byte, s string) []byte {
	return appendString(dst, s, &plainHTML, plainHTMLPrefix(s))
}

// plain marks the bytes a JSON string holds as they are: printable ASCII
// other than the quote and the backslash; plainHTML, also not <, > or &.
var plain, plainHTML = func() (t, h [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
		h[c] = t[c] && c != '<' && c != '>' && c != '&'
	}
	return t, h
}()

const hexDigits = "0123456789abcdef"

// appendString appends s quoted, its first i bytes known to be plain.
func appendString(dst []byte, s string, plain *[256]bool, i int) []byte {
	dst = append(dst, '"')
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendEscapedASCII(dst, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			// As encoding/json: invalid bytes become an escaped U+FFFD, and
			// the line and paragraph separators are escaped (JavaScript).
			dst = append(dst, s[start:i]...)
			switch r {
			case '\u2028':
				dst = append(dst, `\u2028`...)
			case '\u2029':
				dst = append(dst, `\u2029`...)
			default:
				dst = append(dst, `\ufffd`...)
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendEscapedASCII appends the escape of an ASCII byte that is not plain.
func appendEscapedASCII(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// plainPrefix is the length of s's leading run of plain bytes, eight bytes
// at a time while it can: the strings sonde and its clients send (context
// and symbol IDs, names) are such runs of 10-30 bytes, and the byte loop
// took 16 instructions a byte.
func plainPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if hasNonPlain(word(s[i:])) {
			break
		}
	}
	for i < len(s) && plain[s[i]] {
		i++
	}
	return i
}

// plainHTMLPrefix is plainPrefix for AppendHTMLEscaped.
func plainHTMLPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := word(s[i:])
		if hasNonPlain(x) || hasByte(x, '<') || hasByte(x, '>') || hasByte(x, '&') {
			break
		}
	}
	for i < len(s) && plainHTML[s[i]] {
		i++
	}
	return i
}

// word is s's first eight bytes, little-endian.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const ones, tops = 0x0101010101010101, 0x8080808080808080

// hasNonPlain reports whether any byte of x is a control character, a quote,
// a backslash or not ASCII. (x - 0x20…) sets a byte's top bit for bytes below
// 0x20 (and for bytes of 0x80 and up, reported anyway); a borrow can set it
// wrongly only above a byte that is below 0x20 itself, which is reported.
// Quotes and backslashes are the zero bytes of x with those bytes xored out.
func hasNonPlain(x uint64) bool {
	q, b := x^(ones*'"'), x^(ones*'\\')
	return ((x-ones*0x20)|x|((q-ones)&^q)|((b-ones)&^b))&tops != 0
}

// hasByte reports whether some byte of x, all of whose bytes are ASCII
// (hasNonPlain said so first), is c: a zero byte of x^c…, found as in
// hasNonPlain (a borrow only sets a top bit above a zero byte).
func hasByte(x uint64, c byte) bool {
	y := x ^ (ones * uint64(c))
	return (y-ones)&^y&tops != 0
}
