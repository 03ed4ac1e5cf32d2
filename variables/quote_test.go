package variables

import (
	"strings"
	"testing"
)

// TestQuoteString: gdb's spelling of a string's bytes (its std::string
// printer's, in a UTF-8 locale): octal escapes, repeats, the elements
// limit (found in the sixth real-program trial: a std::string of garbage
// in fmt's core printed as "\bk-t\xfeU\x00\x00..." where gdb printed
// "\bk-t\376U", '\000' <repeats 12 times>, ...).
func TestQuoteString(t *testing.T) {
	for _, tc := range []struct {
		s    string
		cut  bool
		want string
	}{
		{"ada", false, `"ada"`},
		{"\bk-t\xfeU" + strings.Repeat("\x00", 12) + "count", false, `"\bk-t\376U", '\000' <repeats 12 times>, "count"`},
		{"a\"b\\c\n\t\x1b", false, `"a\"b\\c\n\t\033"`},
		{"café", false, `"café"`},
		{strings.Repeat("ab", 150), false, `"` + strings.Repeat("ab", 100) + `"...`},
		{"abc", true, `"abc"...`},
		{"", false, `""`},
	} {
		if got := QuoteString([]byte(tc.s), tc.cut, FormatOptions{UTF8: true}); got != tc.want {
			t.Errorf("QuoteString(%q) = %s, want %s", tc.s, got, tc.want)
		}
	}
}
