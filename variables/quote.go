package variables

// QuoteString prints a string's bytes as gdb prints a string's characters
// (std::string's printer, a char array): C's escapes and octal for bytes
// that are no printable character (\376, not Go's \xfe), runs longer than
// o.Repeats as '\000' <repeats 16 times>, at most o.Elements characters
// (200, gdb's print elements, when zero), "..." after them or when cut
// says the bytes are a prefix.
func QuoteString(s []byte, cut bool, o FormatOptions) string {
	if o.Elements <= 0 {
		o.Elements = 200
	}
	if o.Repeats <= 0 {
		o.Repeats = 10
	}
	p := &printer{o: o}
	p.printStr(s, cut)
	return p.b.String()
}
