package demangler

import (
	"math/bits"
	"strings"
)

// RustLegacy decodes a Rust legacy ("_ZN...17h<hash>E") symbol name the way
// rustc-demangle and gdb print it without the hash: identifiers joined by
// "::", "$LT$"-style and "$u7b$"-style escapes decoded, ".." read as "::".
// Unlike Itanium C++ names, a length counts every byte of its identifier:
// "28__rust_begin_short_backtrace" is "__rust_begin_short_backtrace".
// A leading underscore is dropped only before an escape ("_$LT$"), where
// rustc added it to make the identifier start with a valid character.
// false means the name is not a legacy Rust name (the C++ demangler's
// turn).
func RustLegacy(name string) (string, bool) {
	body, ok := rustLegacyBody(name)
	if !ok {
		return "", false
	}
	var sb strings.Builder
	for len(body) > 0 {
		n := 0
		for len(body) > 0 && body[0] >= '0' && body[0] <= '9' {
			if n > len(name) {
				return "", false // longer than the whole name: malformed
			}
			n = n*10 + int(body[0]-'0')
			body = body[1:]
		}
		if n == 0 || n > len(body) {
			return "", false
		}
		id := body[:n]
		body = body[n:]
		if sb.Len() > 0 {
			sb.WriteString("::")
		}
		if strings.HasPrefix(id, "_$") {
			id = id[1:]
		}
		if !writeRustIdent(&sb, id) || sb.Len() > MaxOutput {
			return "", false
		}
	}
	if sb.Len() == 0 {
		return "", false
	}
	return sb.String(), true
}

// rustLegacyBody checks the legacy shape and returns the path's
// length-prefixed identifiers, the hash element and "E" removed. The hash
// is "17h" and 16 hex digits, at least 5 of them distinct (what tells a
// Rust hash from a C++ identifier that happens to look like one).
func rustLegacyBody(name string) (string, bool) {
	if !strings.HasPrefix(name, "_ZN") {
		return "", false
	}
	if i := strings.LastIndex(name, "E."); i > 0 {
		name = name[:i+1] // a ".llvm.123" suffix
	}
	if len(name) < 3+20+1 || !strings.HasSuffix(name, "E") {
		return "", false
	}
	hash := name[len(name)-20 : len(name)-1]
	if hash[:3] != "17h" {
		return "", false
	}
	var seen uint16
	for i := 3; i < len(hash); i++ {
		d, ok := hexValue(hash[i])
		if !ok {
			return "", false
		}
		seen |= 1 << d
	}
	if bits.OnesCount16(seen) < 5 {
		return "", false
	}
	return name[3 : len(name)-20], true
}

// writeRustIdent writes one identifier, decoding rustc's escapes. An
// escape it does not know ends the decoding: the rest is written as is,
// as rustc-demangle does.
func writeRustIdent(sb *strings.Builder, id string) bool {
	for len(id) > 0 {
		switch {
		case id[0] == '$':
			end := strings.IndexByte(id[1:], '$')
			if end < 0 {
				sb.WriteString(id)
				return true
			}
			code := id[1 : 1+end]
			c, ok := rustEscape(code)
			if !ok {
				sb.WriteString(id)
				return true
			}
			sb.WriteByte(c)
			id = id[end+2:]
		case strings.HasPrefix(id, ".."):
			sb.WriteString("::")
			id = id[2:]
		default:
			sb.WriteByte(id[0])
			id = id[1:]
		}
	}
	return true
}

// rustEscape decodes the text between two '$' of a legacy identifier.
func rustEscape(code string) (byte, bool) {
	switch code {
	case "SP":
		return '@', true
	case "BP":
		return '*', true
	case "RF":
		return '&', true
	case "LT":
		return '<', true
	case "GT":
		return '>', true
	case "LP":
		return '(', true
	case "RP":
		return ')', true
	case "C":
		return ',', true
	}
	if len(code) == 3 && code[0] == 'u' {
		hi, ok1 := hexValue(code[1])
		lo, ok2 := hexValue(code[2])
		v := hi<<4 | lo
		if ok1 && ok2 && v >= ' ' && v < 0x7f {
			return v, true
		}
	}
	return 0, false
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
