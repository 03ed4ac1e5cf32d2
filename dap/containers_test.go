package dap

import (
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestContainers: libstdc++'s containers and smart pointers show gdb's
// printers' summaries and expand to their elements (a map's keys as names,
// a deque paged, a smart pointer's pointee), each child an expression that
// evaluates and can be set.
func TestContainers(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"pp_cxx.cc"}, Flags: []string{"-O0", "-std=c++17"}, Name: "pp_cxx"})
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "stop_here"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	frames := c.stack(st.Body.ThreadId)
	locals := c.vars(scopeByName(t, c.scopes(frames[1].Id), "Locals").VariablesReference, nil)
	want := map[string]string{
		"m":        "std::map with 3 elements",
		"m_empty":  "std::map with 0 elements",
		"s":        "std::set with 4 elements",
		"um":       "std::unordered_map with 3 elements",
		"us":       "std::unordered_set with 2 elements",
		"l":        "std::__cxx11::list",
		"l_empty":  "empty std::__cxx11::list",
		"dq":       "std::deque with 129 elements",
		"up":       "std::unique_ptr<int>",
		"sp":       "std::shared_ptr<Point> (use count 2, weak count 1)",
		"wp":       "std::weak_ptr<Point> (use count 2, weak count 1)",
		"sp_null":  "std::shared_ptr<int> (empty)",
		"opt":      "std::optional<int>",
		"opt_none": "std::optional<std::string> [no contained value]",
		"sv":       `"hello, view"`,
		"arr":      "std::array of length 4",
		"pr":       `{first = 9, second = "nine"}`,
		"tp":       "std::tuple containing",
		"m_it":     `{first = 2, second = "two"}`,
		"um_it":    "{first = 3, second = 30}",
		"v_it":     "2",
		"m_none":   "non-dereferenceable iterator for associative container",
	}
	for name, w := range want {
		if v := varByName(t, locals, name); v.Value != w {
			t.Errorf("%s = %q, want %q", name, v.Value, w)
		}
	}
	kidsOf := func(name string, extra map[string]any) []godap.Variable {
		t.Helper()
		v := varByName(t, locals, name)
		if v.VariablesReference == 0 {
			t.Fatalf("%s does not expand: %+v", name, v)
		}
		return c.vars(v.VariablesReference, extra)
	}
	m := kidsOf("m", nil)
	if len(m) != 3 || m[0].Name != "[1]" || m[0].Value != `"one"` || m[2].Name != "[3]" || m[2].Value != `"three"` {
		t.Errorf("m's children: %+v", m)
	}
	// Strings are their text, without raw members under them (gdb's
	// printers' display hint "string"): yaml-cpp's const
	// std::string & expanded to _M_dataplus and _M_local_buf.
	for _, v := range []godap.Variable{varByName(t, locals, "sv"), varByName(t, locals, "sref"), m[0]} {
		if v.VariablesReference != 0 || !strings.Contains(v.Value, `"`) {
			t.Errorf("a string expands: %+v", v)
		}
	}
	// A void * has nothing to expand to (it offered one child, "*vp =
	// <Attempt to take contents of a non-pointer value>": mujs's read buffer).
	// Text in UTF-8 as text (a DAP client shows Unicode; gdb in a UTF-8
	// locale prints it so): mujs's line buffer was all octal escapes.
	if u := varByName(t, locals, "utf"); !strings.HasSuffix(u.Value, ` "café \377"`) {
		t.Errorf("utf: %+v", u)
	}
	// A pointer to a container or string expands to it (gdb's print *p),
	// not to its raw members.
	for name, want := range map[string]string{"pv": "std::vector of length 3", "pm": "std::map with 3 elements"} {
		if k := kidsOf(name, nil); len(k) != 1 || k[0].Value != want || k[0].VariablesReference == 0 {
			t.Errorf("%s's children: %+v", name, k)
		}
	}
	if vp := varByName(t, locals, "vp"); vp.VariablesReference != 0 || !strings.HasPrefix(vp.Value, "0x") {
		t.Errorf("void *vp: %+v", vp)
	}
	mp := kidsOf("mp", nil)
	if len(mp) != 2 || mp[1].Name != `["b"]` || mp[1].Value != "{x = 3, y = 4}" || mp[1].VariablesReference == 0 {
		t.Fatalf("mp's children: %+v", mp)
	}
	if y := varByName(t, c.vars(mp[1].VariablesReference, nil), "y"); y.Value != "4" {
		t.Errorf(`mp["b"].y: %+v`, y)
	}
	// The child's expression evaluates, and setVariable writes through it.
	if e := c.evaluate(mp[1].EvaluateName+".x", frames[1].Id, "watch"); e.Body.Result != "3" {
		t.Errorf("%s.x = %s", mp[1].EvaluateName, e.Body.Result)
	}
	if dq := varByName(t, locals, "dq"); dq.IndexedVariables != 129 {
		t.Errorf("dq: %+v", dq)
	}
	page := kidsOf("dq", map[string]any{"filter": "indexed", "start": 120, "count": 20})
	if len(page) != 9 || page[0].Name != "[120]" || page[0].Value != "121" || page[8].Value != "129" {
		t.Errorf("dq from 120: %+v", page)
	}
	up := kidsOf("up_pt", nil)
	if len(up) != 1 || up[0].Name != "get()" || up[0].VariablesReference == 0 {
		t.Fatalf("up_pt's children: %+v", up)
	}
	if x := varByName(t, c.vars(up[0].VariablesReference, nil), "x"); x.Value != "7" {
		t.Errorf("up_pt.get()->x: %+v", x)
	}
	if l := kidsOf("l", nil); len(l) != 3 || l[2].Name != "[2]" || l[2].Value != "6" {
		t.Errorf("l's children: %+v", l)
	}
	if o := kidsOf("opt", nil); len(o) != 1 || o[0].Name != "[contained value]" || o[0].Value != "5" {
		t.Errorf("opt's children: %+v", o)
	}
	if tp := kidsOf("tp", nil); len(tp) != 3 || tp[2].Name != "[3]" || tp[2].Value != `"tup"` {
		t.Errorf("tp's children: %+v", tp)
	}
	if it := kidsOf("m_it", nil); len(it) != 1 || it[0].Name != "*" || varByName(t, c.vars(it[0].VariablesReference, nil), "second").Value != `"two"` {
		t.Errorf("m_it's children: %+v", it)
	}
	us := kidsOf("us", nil)
	if len(us) != 2 || !strings.Contains(us[0].Value+us[1].Value, `"yy"`) {
		t.Errorf("us's children: %+v", us)
	}
	// setVariable on a map's value, read back by evaluate.
	set := c.request("setVariable", map[string]any{"variablesReference": varByName(t, locals, "um").VariablesReference,
		"name": "[2]", "value": "99"}).(*godap.SetVariableResponse)
	if set.Body.Value != "99" {
		t.Errorf("setVariable um[2]: %+v", set.Body)
	}
	if e := c.evaluate("um", frames[1].Id, "hover"); !strings.HasPrefix(e.Body.Result, "std::unordered_map with 3 elements") || e.Body.VariablesReference == 0 {
		t.Errorf("hover um: %+v", e.Body)
	}
	if e := c.evaluate("sp", frames[1].Id, "repl"); e.Body.Result != "std::shared_ptr<Point> (use count 2, weak count 1)" {
		t.Errorf("repl sp: %+v", e.Body)
	}
	// loadedSources: the program's file and the headers with code, each
	// once, absolute.
	srcs := c.request("loadedSources", nil).(*godap.LoadedSourcesResponse).Body.Sources
	seen := map[string]bool{}
	for _, src := range srcs {
		if seen[src.Path] || !strings.HasPrefix(src.Path, "/") {
			t.Errorf("loadedSources: %q twice or relative", src.Path)
		}
		seen[src.Path] = true
	}
	if !seen[testprog.Source("pp_cxx.cc")] || !seen["/usr/include/c++/12/bits/stl_tree.h"] && !seen[hdrPath(srcs, "stl_tree.h")] {
		t.Errorf("loadedSources lacks pp_cxx.cc or stl_tree.h: %+v", srcs)
	}
	c.request("disconnect", nil)
}

// hdrPath finds a source by its base name ("" when none).
func hdrPath(srcs []godap.Source, name string) string {
	for _, s := range srcs {
		if s.Name == name {
			return s.Path
		}
	}
	return "\x00"
}

// TestRustContainers: Rust's HashMap, HashSet, Rc, Arc, VecDeque and slices
// show rust-gdb's summaries and expand to their elements (a HashMap's keys
// as names), Box to its pointee.
func TestRustContainers(t *testing.T) {
	prog := testprog.BuildRust(t, "pp_rust.rs", "pp_rust", "-C", "opt-level=0")
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "pp_rust::stop_here"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	frames := c.stack(st.Body.ThreadId)
	locals := c.vars(scopeByName(t, c.scopes(frames[1].Id), "Locals").VariablesReference, nil)
	want := map[string]string{
		"hm": "HashMap(size=5)", "names": "HashMap(size=1)", "hs": "HashSet(size=2)", "empty": "HashMap(size=0)",
		"rc": "Rc(strong=2, weak=1)", "arc": "Arc(strong=1, weak=0)", "dq": "VecDeque(size=3)", "sl": "&[i32](size=3)", "s": `"hello"`,
		"bt": "BTreeMap(size=40)", "bs": "BTreeSet(size=2)", "vp": "Vec(size=2)", "vc": "Vec(size=2)",
	}
	for name, w := range want {
		if v := varByName(t, locals, name); v.Value != w {
			t.Errorf("%s = %q, want %q", name, v.Value, w)
		}
	}
	// A &str is its text, without data_ptr and length under it.
	for _, name := range []string{"s"} {
		if v := varByName(t, locals, name); v.VariablesReference != 0 || v.Value == "" {
			t.Errorf("%s expands: %+v", name, v)
		}
	}
	kids := func(name string) []godap.Variable {
		t.Helper()
		v := varByName(t, locals, name)
		if v.VariablesReference == 0 {
			t.Fatalf("%s does not expand: %+v", name, v)
		}
		return c.vars(v.VariablesReference, nil)
	}
	// A &String and a &Vec expand to their value (a String's text, a
	// Vec's elements), not to the String's raw vec.
	if k := kids("sref"); len(k) != 1 || k[0].Value != `"owned"` || k[0].VariablesReference != 0 {
		t.Errorf("sref's children: %+v", k)
	}
	if k := kids("vref"); len(k) != 1 || k[0].Value != "Vec(size=2)" || k[0].VariablesReference == 0 {
		t.Errorf("vref's children: %+v", k)
	}
	hm := kids("hm")
	seen := map[string]string{}
	for _, k := range hm {
		seen[k.Name] = k.Value
	}
	if len(hm) != 5 || seen["[3]"] != "300" || seen["[5]"] != "500" {
		t.Errorf("hm's children: %+v", hm)
	}
	names := kids("names")
	if len(names) != 1 || names[0].Name != `["a"]` || names[0].VariablesReference == 0 {
		t.Fatalf("names' children: %+v", names)
	}
	if y := varByName(t, c.vars(names[0].VariablesReference, nil), "y"); y.Value != "2" {
		t.Errorf(`names["a"].y: %+v`, y)
	}
	if dq := kids("dq"); len(dq) != 3 || dq[0].Value != "0" || dq[2].Value != "2" {
		t.Errorf("dq's children: %+v", dq)
	}
	if sl := kids("sl"); len(sl) != 3 || sl[0].Value != "20" {
		t.Errorf("sl's children: %+v", sl)
	}
	if bt := kids("bt"); len(bt) != 40 || bt[0].Name != "[0]" || bt[0].Value != "0" || bt[39].Name != "[40]" || bt[39].Value != "-35" {
		t.Errorf("bt's children: %+v", bt)
	}
	if bs := kids("bs"); len(bs) != 2 || bs[0].Value != `"apple"` || bs[1].Value != `"pear"` {
		t.Errorf("bs's children: %+v", bs)
	}
	// A Vec<char>'s elements are chars, as gdb prints them (they were
	// "unsigned int" 111, found on strsim's damerau_levenshtein).
	if vc := kids("vc"); len(vc) != 2 || vc[0].Value != "111 'o'" || vc[1].Value != "107 'k'" {
		t.Errorf("vc's children: %+v", vc)
	}
	rc := kids("rc")
	if len(rc) != 3 || rc[0].Name != "value" || rc[1].Value != "2" || rc[2].Value != "1" {
		t.Errorf("rc's children: %+v", rc)
	}
	if x := varByName(t, c.vars(rc[0].VariablesReference, nil), "x"); x.Value != "3" {
		t.Errorf("rc.value.x: %+v", x)
	}
	bx := varByName(t, locals, "bx")
	if bx.VariablesReference == 0 {
		t.Fatalf("bx (a Box<Point>) does not expand: %+v", bx)
	}
	if x := varByName(t, c.vars(bx.VariablesReference, nil), "x"); x.Value != "5" {
		t.Errorf("bx.x: %+v", x)
	}
	c.request("disconnect", nil)
}
