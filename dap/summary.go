package dap

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/variables"
)

// Summaries: the two string types editors users look at most are shown as
// strings (as gdb's Rust support and libstdc++'s printers show them), with
// their members still expandable: Rust's &str (data_ptr, length) and
// libstdc++'s std::string (_M_dataplus._M_p, _M_string_length), and Rust's
// String (vec: a Vec<u8>, whose buf holds the data pointer under a few
// wrappers that change between Rust versions, and len).

// maxSummary bounds the characters a summary reads.
const maxSummary = 200

// summary returns a string value's text, or false for any other value.
func summary(fe *frameEnv, v variables.Value) (string, bool) {
	t := v.Type.Strip()
	if t == nil || t.Kind != variables.KindStruct && t.Kind != variables.KindClass || v.Bytes == nil || fe.env == nil || fe.env.Frame == nil {
		return "", false
	}
	if t.Variants != nil {
		return enumSummary(fe, v, t)
	}
	if isVector(t) {
		return vectorSummary(t, v.Bytes)
	}
	if isRustVec(t) {
		return rustVecSummary(t, v.Bytes)
	}
	var ptrOff, lenOff int64
	switch {
	case t.Name == "&str" || t.Name == "&mut str":
		var ok1, ok2 bool
		ptrOff, ok1 = fieldOffset(t, "data_ptr")
		lenOff, ok2 = fieldOffset(t, "length")
		if !ok1 || !ok2 {
			return "", false
		}
	case strings.HasPrefix(t.Name, "basic_string<char,") || t.Name == "string":
		dp, ok1 := fieldOffset(t, "_M_dataplus")
		l, ok2 := fieldOffset(t, "_M_string_length")
		if !ok1 || !ok2 {
			return "", false
		}
		p, ok := memberType(t, "_M_dataplus")
		if !ok {
			return "", false
		}
		po, ok := fieldOffset(p, "_M_p")
		if !ok {
			return "", false
		}
		ptrOff, lenOff = dp+po, l
	case t.Name == "String" || t.Name == "alloc::string::String":
		var ok bool
		if ptrOff, lenOff, ok = rustStringParts(t); !ok {
			return "", false
		}
	default:
		if c, ok := containerOf(fe, v); ok && c.Target != nil {
			// An iterator: the element it points to.
			return fe.reader.Format(*c.Target, nil, fe.env.Frame, variables.FormatOptions{Pretty: true, UTF8: true}), true
		} else if ok && c.Summary != "" {
			return c.Summary, true
		}
		return "", false
	}
	if ptrOff < 0 || lenOff < 0 || ptrOff+8 > int64(len(v.Bytes)) || lenOff+8 > int64(len(v.Bytes)) {
		return "", false
	}
	ptr := binary.LittleEndian.Uint64(v.Bytes[ptrOff:])
	n := binary.LittleEndian.Uint64(v.Bytes[lenOff:])
	read := min(n, maxSummary)
	buf := make([]byte, read)
	got, _ := fe.env.Frame.ReadMemory(buf, ptr)
	if uint64(got) < read {
		return "<error: Cannot access memory at address 0x" + strconv.FormatUint(ptr, 16) + ">", true
	}
	// gdb's spelling: octal escapes, repeats (strconv.Quote gave Go's
	// \xfe and \x00 for a string's garbage in fmt's core).
	return variables.QuoteString(buf, n > read, variables.FormatOptions{UTF8: true}), true
}

func fieldOffset(t *variables.Type, name string) (int64, bool) {
	for _, f := range t.Fields {
		if f.Name == name && f.BitSize == 0 && f.OffsetExpr == nil {
			return f.Offset, true
		}
	}
	return 0, false
}

func memberType(t *variables.Type, name string) (*variables.Type, bool) {
	for _, f := range t.Fields {
		if f.Name == name {
			if st := f.Type.Strip(); st != nil {
				return st, true
			}
		}
	}
	return nil, false
}

// rustStringParts finds the offsets of a Rust String's data pointer and
// length: vec.len, and the first pointer under vec.buf through members
// named inner, ptr or pointer (RawVec{ptr: Unique{pointer: NonNull{pointer}}}
// in older versions, RawVec{inner: RawVecInner{ptr: ...}} in newer ones).
func rustStringParts(t *variables.Type) (ptrOff, lenOff int64, ok bool) {
	vo, ok1 := fieldOffset(t, "vec")
	vt, ok2 := memberType(t, "vec")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	lo, ok1 := fieldOffset(vt, "len")
	bo, ok2 := fieldOffset(vt, "buf")
	cur, ok3 := memberType(vt, "buf")
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, false
	}
	off := vo + bo
	for depth := 0; depth < 8; depth++ {
		if cur.Kind == variables.KindPointer {
			return off, vo + lo, true
		}
		found := false
		for _, name := range []string{"inner", "ptr", "pointer"} {
			o, ok1 := fieldOffset(cur, name)
			mt, ok2 := memberType(cur, name)
			if ok1 && ok2 {
				off, cur, found = off+o, mt, true
				break
			}
		}
		if !found {
			return 0, 0, false
		}
	}
	return 0, 0, false
}
