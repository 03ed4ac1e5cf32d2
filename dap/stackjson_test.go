package dap

import (
	"encoding/json"
	"testing"

	godap "github.com/google/go-dap"
)

// stackJSONCases are bodies whose hand encoding must equal encoding/json's.
func stackJSONCases() []godap.StackTraceResponseBody {
	rust := godap.StackFrame{Id: 20, Name: "std::rt::lang_start::{{closure}}", Source: &godap.Source{Name: "rt.rs",
		Path: "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/rt.rs"}, Line: 206, Column: 18,
		InstructionPointerReference: "0x56068ef625de", ModuleId: "/tmp/dapclient_prog_rs"}
	odd := godap.StackFrame{Id: -3, Name: "operator<<(std::ostream&, \"q\" \\ \u2028 é \x01 \xff)", Source: &godap.Source{Name: "a<b>.cc",
		PresentationHint: "deemphasize", SourceReference: 7, Origin: "x&y"}, EndLine: 9, EndColumn: 2, CanRestart: true,
		ModuleId: 42, PresentationHint: "subtle"}
	nested := godap.StackFrame{Name: "n", Source: &godap.Source{Name: "s", Sources: []godap.Source{{Name: "t"}},
		Checksums: []godap.Checksum{{Algorithm: "MD5", Checksum: "00"}}, AdapterData: json.RawMessage(`{"k":1}`)}}
	return []godap.StackTraceResponseBody{
		{},
		{StackFrames: []godap.StackFrame{}},
		{StackFrames: []godap.StackFrame{rust, {Id: 21, Name: "0x401000 in libc.so.6", PresentationHint: "subtle", ModuleId: ""}}, TotalFrames: 19},
		{StackFrames: []godap.StackFrame{odd, nested, {Source: &godap.Source{}}}, TotalFrames: -1},
		{StackFrames: []godap.StackFrame{{Name: "<&dyn Fn() as FnOnce>::call_once\t\n\r\b\f\"q\"\\\x01\x1f\x7f",
			Source: &godap.Source{Path: "/a b/<c>&d.rs"}, InstructionPointerReference: "\x00"}}},
	}
}

// TestStackTraceJSONMatchesEncodingJSON: the hand-written encoding of a
// stackTrace body is encoding/json's, byte for byte, for frames as sonde
// makes them and for every field go-dap has.
func TestStackTraceJSONMatchesEncodingJSON(t *testing.T) {
	for i, body := range stackJSONCases() {
		want, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(stackTraceBody(body))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if string(got) != string(want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestStackTraceResponseMatchesEncodingJSON: a whole stackTrace response
// as the writer encodes it is encoding/json's encoding of the same response
// with go-dap's body.
func TestStackTraceResponseMatchesEncodingJSON(t *testing.T) {
	for i, body := range stackJSONCases() {
		for _, msg := range []string{"", "a <note>"} {
			r := &response{Response: godap.Response{ProtocolMessage: godap.ProtocolMessage{Seq: 7 + i, Type: "response"},
				RequestSeq: 3, Success: msg == "", Command: "stackTrace", Message: msg}, Body: stackTraceBody(body)}
			got, err := encodeMessage(r)
			if err != nil {
				t.Fatal(err)
			}
			r.Body = body
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
			}
		}
	}
}

// FuzzStackTraceJSON: any names, paths and numbers encode as encoding/json
// encodes them.
func FuzzStackTraceJSON(f *testing.F) {
	f.Add("main", "/src/a.c", "0x401136", "/bin/a", "", 3, 1, 0)
	f.Add("<\"é\u2028\x00\xff>", "rel/path", "", "", "label", -1, 0, 9)
	f.Add("<&dyn Fn>\t\\\x7f", "/a\"b", "\b\f", "m\r\n", "", 0, 0, 0)
	f.Fuzz(func(t *testing.T, name, path, ip, module, hint string, line, column, ref int) {
		fr := godap.StackFrame{Id: line ^ column, Name: name, Line: line, Column: column, InstructionPointerReference: ip,
			PresentationHint: hint}
		if module != "" {
			fr.ModuleId = module
		}
		if path != "" || ref != 0 {
			fr.Source = &godap.Source{Name: hint, Path: path, SourceReference: ref}
		}
		body := godap.StackTraceResponseBody{StackFrames: []godap.StackFrame{fr, fr}, TotalFrames: ref}
		want, _ := json.Marshal(body)
		got, err := json.Marshal(stackTraceBody(body))
		if err != nil || string(got) != string(want) {
			t.Fatalf("got %s (%v)\nwant %s", got, err, want)
		}
	})
}

// BenchmarkStackTraceJSON: a stackTrace response of 19 frames (the Rust
// program's stack below a step) as the writer encodes it, by hand and (with
// go-dap's body) by encoding/json's reflection.
func BenchmarkStackTraceJSON(b *testing.B) {
	rust := stackJSONCases()[2].StackFrames[0]
	body := godap.StackTraceResponseBody{TotalFrames: 19}
	for i := 0; i < 19; i++ {
		body.StackFrames = append(body.StackFrames, rust)
	}
	r := &response{Response: godap.Response{ProtocolMessage: godap.ProtocolMessage{Seq: 7, Type: "response"},
		RequestSeq: 3, Success: true, Command: "stackTrace"}}
	b.Run("hand", func(b *testing.B) {
		r.Body = stackTraceBody(body)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			encodeMessage(r)
		}
	})
	b.Run("reflect", func(b *testing.B) {
		r.Body = body
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			encodeMessage(r)
		}
	})
}
