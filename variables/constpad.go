package variables

// constBytes is a DW_AT_const_value block as the bytes of a value of type t.
// Clang gives an x87 long double's constant in its 10 significant bytes
// (DW_FORM_block1 of 10) where the type is 16 bytes wide; gdb prints the
// number, so the block is padded with zeros to the type's size. Blocks of
// other types are kept as they are (a short block of an integer or struct
// stays <optimized out>, never made up).
func constBytes(b []byte, t *Type) []byte {
	s := t.Strip()
	if s == nil || s.Kind != KindBase || s.Encoding != EncFloat {
		return b
	}
	size := s.ByteSize()
	if size <= int64(len(b)) || len(b) != 10 || size != 16 {
		return b
	}
	out := make([]byte, size)
	copy(out, b)
	return out
}
