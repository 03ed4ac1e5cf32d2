package symbols

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestDeclLinesMatchReadelf: every frame's DeclLine, at every code address
// of an -O2 C++ program (inlined members, templates, an out-of-class
// definition; DWARF 5's implicit_const lines and DWARF 4's data forms), is
// the DW_AT_decl_line readelf shows on the DIE that declares the function.
func TestDeclLinesMatchReadelf(t *testing.T) {
	for _, dw := range []string{"-gdwarf-5", "-gdwarf-4"} {
		path := build(t, "dw_cxx.cc", "-O2", dw)
		want := readelfDeclLines(t, path)
		b := open(t, path)
		compared, pop := 0, false
		for _, a := range codeAddresses(t, path) {
			frames, _ := b.Lookup(a)
			for _, f := range frames {
				key := f.LinkageName
				if key == "" {
					key = f.Function
				}
				w, ok := want[key]
				if !ok {
					continue
				}
				compared++
				pop = pop || strings.HasPrefix(f.Function, "corpus::detail::Stack<int>::pop")
				if f.DeclLine != w {
					t.Errorf("%s %#x %s: DeclLine %d, readelf %d", dw, a, f.Function, f.DeclLine, w)
				}
			}
		}
		t.Logf("%s: %d frames compared", dw, compared)
		if compared < 50 || !pop {
			t.Errorf("%s: %d frames compared (Stack<int>::pop among them: %v)", dw, compared, pop)
		}
	}
}

// readelfDeclLines maps the linkage name (else the name) of each
// subprogram to its DW_AT_decl_line: the declaring DIE's, or the line of
// a definition that refers to it by DW_AT_specification (an out-of-class
// member's body: where pprof's start line is). A name with two different
// lines is left out.
func readelfDeclLines(t *testing.T, path string) map[string]int {
	t.Helper()
	out, err := exec.Command("readelf", "--debug-dump=info", "-W", path).Output()
	if err != nil {
		t.Skipf("readelf: %v", err)
	}
	type die struct {
		key, spec string
		line      int
	}
	dies := map[string]*die{} // by offset, "0x8b20"
	var order []*die
	var cur *die
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var name, linkage string
	end := func() {
		if cur != nil {
			cur.key = linkage
			if cur.key == "" {
				cur.key = name
			}
		}
	}
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l)
		switch {
		case strings.Contains(l, "Abbrev Number"):
			end()
			cur, name, linkage = nil, "", ""
			if strings.Contains(l, "(DW_TAG_subprogram)") && len(f) > 0 {
				off := strings.Trim(f[0][strings.Index(f[0], "><")+1:], "<>:")
				cur = &die{}
				dies["0x"+strings.TrimLeft(off, "0")] = cur
				order = append(order, cur)
			}
		case cur == nil || len(f) == 0:
		case strings.Contains(l, "DW_AT_name"):
			name = f[len(f)-1]
		case strings.Contains(l, "DW_AT_linkage_name"):
			linkage = f[len(f)-1]
		case strings.Contains(l, "DW_AT_decl_line"):
			cur.line, _ = strconv.Atoi(f[len(f)-1])
		case strings.Contains(l, "DW_AT_specification"):
			cur.spec = strings.Trim(f[len(f)-1], "<>")
		}
	}
	end()
	m, bad := map[string]int{}, map[string]bool{}
	set := func(key string, line int) {
		if old, ok := m[key]; ok && old != line {
			bad[key] = true
		}
		m[key] = line
	}
	defined := map[string]bool{}
	for _, d := range order {
		if s := dies[d.spec]; d.spec != "" && s != nil && s.key != "" && d.line > 0 {
			defined[s.key] = true
			set(s.key, d.line)
		}
	}
	for _, d := range order {
		if d.spec == "" && d.key != "" && d.line > 0 && !defined[d.key] {
			set(d.key, d.line)
		}
	}
	for k := range bad {
		delete(m, k)
	}
	return m
}
