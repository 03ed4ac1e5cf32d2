package expr

import (
	"sort"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/variables"
)

func base(name string, size int64, enc variables.Encoding) *variables.Type {
	return &variables.Type{Kind: variables.KindBase, Name: name, Size: size, Encoding: enc, Count: -1}
}

// The types of literals and of arithmetic results (x86-64 LP64).
var (
	typeVoid    = &variables.Type{Kind: variables.KindVoid, Name: "void", Size: 1, Count: -1}
	typeBool    = base("bool", 1, variables.EncBoolean)
	typeChar    = base("char", 1, variables.EncSignedChar)
	typeSChar   = base("signed char", 1, variables.EncSignedChar)
	typeUChar   = base("unsigned char", 1, variables.EncUnsignedChar)
	typeShort   = base("short", 2, variables.EncSigned)
	typeUShort  = base("unsigned short", 2, variables.EncUnsigned)
	typeInt     = base("int", 4, variables.EncSigned)
	typeUInt    = base("unsigned int", 4, variables.EncUnsigned)
	typeLong    = base("long", 8, variables.EncSigned)
	typeULong   = base("unsigned long", 8, variables.EncUnsigned)
	typeLLong   = base("long long", 8, variables.EncSigned)
	typeULLong  = base("unsigned long long", 8, variables.EncUnsigned)
	typeFloat   = base("float", 4, variables.EncFloat)
	typeDouble  = base("double", 8, variables.EncFloat)
	typeLDouble = base("long double", 16, variables.EncFloat)
)

// keywordTypes maps a canonical keyword spelling to its type.
var keywordTypes = map[string]*variables.Type{
	"void": typeVoid, "bool": typeBool, "_Bool": typeBool, "char": typeChar, "signed char": typeSChar,
	"unsigned char": typeUChar, "short": typeShort, "unsigned short": typeUShort, "int": typeInt,
	"unsigned int": typeUInt, "long": typeLong, "unsigned long": typeULong, "long long": typeLLong,
	"unsigned long long": typeULLong, "float": typeFloat, "double": typeDouble, "long double": typeLDouble,
	"wchar_t": base("wchar_t", 4, variables.EncSigned), "char16_t": base("char16_t", 2, variables.EncUTF),
	"char32_t": base("char32_t", 4, variables.EncUTF),
}

// keywordType canonicalizes specifier words ("long unsigned int" ->
// "unsigned long").
func keywordType(words []string) *variables.Type {
	longs, signed, unsigned := 0, false, false
	var rest []string
	for _, w := range words {
		switch w {
		case "long":
			longs++
		case "signed":
			signed = true
		case "unsigned":
			unsigned = true
		default:
			rest = append(rest, w)
		}
	}
	sort.Strings(rest)
	baseWord := strings.Join(rest, " ")
	if baseWord == "int" && (longs > 0 || unsigned || signed) {
		baseWord = ""
	}
	if baseWord == "short int" || baseWord == "int short" {
		baseWord = "short"
	}
	var parts []string
	if unsigned {
		parts = append(parts, "unsigned")
	}
	if signed && baseWord == "char" {
		parts = append(parts, "signed")
	}
	for i := 0; i < longs; i++ {
		parts = append(parts, "long")
	}
	if baseWord != "" {
		parts = append(parts, baseWord)
	}
	if len(parts) == 0 || (len(parts) == 1 && signed && parts[0] != "char") {
		if unsigned {
			return typeUInt
		}
		if len(parts) == 0 {
			return typeInt
		}
	}
	if len(parts) == 1 && parts[0] == "unsigned" {
		return typeUInt
	}
	return keywordTypes[strings.Join(parts, " ")]
}

// Made-up pointer and array types are cached so that the same expression
// gives the same *Type (front ends give types IDs).
var (
	madeMu  sync.Mutex
	pointer = map[*variables.Type]*variables.Type{}
)

// maxMadeTypes bounds the cache of made-up types.
const maxMadeTypes = 1 << 14

// PointerTo returns the type "pointer to t".
func PointerTo(t *variables.Type) *variables.Type {
	if t == nil {
		t = typeVoid
	}
	madeMu.Lock()
	defer madeMu.Unlock()
	if p, ok := pointer[t]; ok {
		return p
	}
	if len(pointer) > maxMadeTypes {
		pointer = map[*variables.Type]*variables.Type{}
	}
	p := &variables.Type{Kind: variables.KindPointer, Size: 8, Elem: t, Count: -1}
	pointer[t] = p
	return p
}

// ArrayOf returns the type "array of n t" (not cached).
func ArrayOf(t *variables.Type, n int64) *variables.Type {
	return &variables.Type{Kind: variables.KindArray, Size: -1, Elem: t, Count: n}
}

// isScalar: integers, floats, pointers.
func isScalar(t *variables.Type) bool {
	return t.IsInteger() || t.IsFloat() || t.IsPointer()
}

// intRank orders integer types for the usual conversions.
func intRank(t *variables.Type) int {
	s := t.Strip()
	if s.Kind == variables.KindBase && s.Encoding == variables.EncBoolean {
		return 0
	}
	switch s.ByteSize() {
	case 1:
		return 1
	case 2:
		return 2
	case 4:
		return 3
	}
	return 4
}

// intType returns the builtin integer type of a size and signedness.
func intType(size int64, signed bool) *variables.Type {
	switch {
	case size <= 4 && signed:
		return typeInt
	case size <= 4:
		return typeUInt
	case signed:
		return typeLong
	}
	return typeULong
}

// promote applies the integer promotions.
func promote(t *variables.Type) *variables.Type {
	s := t.Strip()
	if s.Kind == variables.KindEnum {
		if s.ByteSize() <= 4 {
			if s.IsSigned() || s.ByteSize() < 4 {
				return typeInt
			}
			return typeUInt
		}
		return intType(8, s.IsSigned())
	}
	if intRank(s) < 3 {
		return typeInt
	}
	return s
}

// arithType is the type two arithmetic operands are converted to.
func arithType(a, b *variables.Type) *variables.Type {
	if a.IsFloat() || b.IsFloat() {
		sa, sb := int64(0), int64(0)
		if a.IsFloat() {
			sa = a.ByteSize()
		}
		if b.IsFloat() {
			sb = b.ByteSize()
		}
		switch max(sa, sb) {
		case 4:
			return typeFloat
		case 8:
			return typeDouble
		}
		return typeLDouble
	}
	pa, pb := promote(a), promote(b)
	za, zb := pa.ByteSize(), pb.ByteSize()
	sa, sb := pa.IsSigned(), pb.IsSigned()
	switch {
	case sa == sb:
		return intType(max(za, zb), sa)
	case !sa && za >= zb:
		return intType(za, false)
	case !sb && zb >= za:
		return intType(zb, false)
	case sa && za > zb:
		return intType(za, true)
	case sb && zb > za:
		return intType(zb, true)
	}
	return intType(max(za, zb), false)
}
