package services

import (
	"errors"
	"testing"
)

// TestParseContextQuery checks the spec's grammar and the C agent's errors.
func TestParseContextQuery(t *testing.T) {
	for _, q := range []string{"", "httpd", "pid=4711/*", "/server/**", `"Linux 2.6.14"/Kernel/*`,
		`ID="P1.1",id="a\"b\\c"`, "/**/HasState=true", "**/ID=P1"} {
		if _, err := ParseContextQuery(q); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
	cq, _ := ParseContextQuery(`ID="P1.1",id="a\"b\\c"`)
	if len(cq.parts) != 1 || len(cq.parts[0].props) != 2 || cq.parts[0].props[1] != (queryProp{"id", `a"b\c`}) {
		t.Errorf("quoted values: %+v", cq)
	}
	cq, _ = ParseContextQuery(`"Linux 2.6.14"/Kernel/*`)
	if len(cq.parts) != 3 || cq.parts[0].props[0] != (queryProp{"", "Linux 2.6.14"}) || cq.parts[2].wild != "*" {
		t.Errorf("names: %+v", cq)
	}
	for _, q := range []string{"/", "ID=ID=", "ID=ID=ID", "a//b", "a,", "a=", "***", "*x", `"open`, `"a"b`, "a b", "pid=12x", `"\n"`, "a/", ",a"} {
		_, err := ParseContextQuery(q)
		var se *QuerySyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want a syntax error", q, err)
		}
	}
}

// FuzzContextQuery: any text parses or fails with a syntax error, without
// panicking.
func FuzzContextQuery(f *testing.F) {
	for _, s := range []string{"pid=4711/*", `/**/ID="P1.1"`, `"Linux 2.6.14"/Kernel/*`, "ID=ID=", `a,b=1,"c"="d"/**`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		cq, err := ParseContextQuery(q)
		if err != nil {
			var se *QuerySyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(q) {
				t.Fatalf("%q: %v", q, err)
			}
			return
		}
		if len(cq.parts) > maxQueryParts {
			t.Fatalf("%d parts", len(cq.parts))
		}
		_ = cq.Match(nil)
	})
}
