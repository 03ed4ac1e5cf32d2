package expr

import (
	"testing"
)

// FuzzParse feeds arbitrary text to the parser and, when it parses, to the
// evaluator without a target: errors are fine, panics and hangs are not.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"1+2*(3-4/2)", "a->b.c[3]", "(unsigned long)&x", "sizeof(struct point *)", "x ? y : z",
		"'\\x41' + \"str\"[1]", "0x1p3 + 1e-3f", "a = b += 3", "$rax << 2", "ns::v + ::g",
		"(((((((((1)))))))))", "-~!*&x", "f(1, 2)", "1 ? 2 : 3 ? 4 : 5", "07 + 0b101 + 10ull",
		"(char)-1 >> 1", "1/0", "-9223372036854775807L - 1", "sizeof(int[3][4])", "\"a\" \"b\"",
		"(${T@P1@1000@2a})0x10", "x.${M@P1@1@2@0}->y", "${R7.P1.1} + 1", "${", "${}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		n, err := Parse(src, func(name string) bool { return name == "T" })
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		_, _ = Evaluate(n, &Env{})
	})
}
