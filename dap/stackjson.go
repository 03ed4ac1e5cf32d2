package dap

import (
	"encoding/json"
	"strconv"

	godap "github.com/google/go-dap"
)

// stackTraceBody is a stackTrace response's body, encoded by hand: it is
// the largest response of a stop's round (a Rust stack has 19 frames below
// a step, ~6 KB), and encoding/json's reflection over go-dap's StackFrame
// and Source was a fifth of the server's time in a warm round. The output
// is what encoding/json makes of godap.StackTraceResponseBody, byte for
// byte (TestStackTraceJSONMatchesEncodingJSON, FuzzStackTraceJSON). Strings,
// those that need escaping included, are written by internal/jsonstr
// (AppendHTMLEscaped: json.Marshal's escaping); what this encoder does not
// know how to write (a source's nested sources, checksums or adapter data,
// a module id that is not a string) it hands to encoding/json.
//
// The whole response is written by encodeMessage: through json.Marshal, a
// MarshalJSON's output is validated and compacted byte by byte, which cost
// more than the reflection it saves.
type stackTraceBody godap.StackTraceResponseBody

// MarshalJSON is for encoders other than encodeMessage.
func (b stackTraceBody) MarshalJSON() ([]byte, error) {
	return b.appendJSON(make([]byte, 0, 64+300*len(b.StackFrames)))
}

// encodeMessage encodes a message to send as json.Marshal does; a
// stackTrace response without json.Marshal.
func encodeMessage(m godap.Message) ([]byte, error) {
	r, ok := m.(*response)
	if !ok {
		return json.Marshal(m)
	}
	body, ok := r.Body.(stackTraceBody)
	if !ok {
		return json.Marshal(m)
	}
	out := make([]byte, 0, 160+300*len(body.StackFrames))
	out = append(out, `{"seq":`...)
	out = strconv.AppendInt(out, int64(r.Seq), 10)
	out = append(out, `,"type":`...)
	out = appendJSONString(out, r.Type)
	out = append(out, `,"request_seq":`...)
	out = strconv.AppendInt(out, int64(r.RequestSeq), 10)
	out = append(out, `,"success":`...)
	out = strconv.AppendBool(out, r.Success)
	out = append(out, `,"command":`...)
	out = appendJSONString(out, r.Command)
	if r.Message != "" {
		out = append(out, `,"message":`...)
		out = appendJSONString(out, r.Message)
	}
	out = append(out, `,"body":`...)
	out, err := body.appendJSON(out)
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

func (b stackTraceBody) appendJSON(out []byte) ([]byte, error) {
	out = append(out, `{"stackFrames":`...)
	if b.StackFrames == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, '[')
		for i := range b.StackFrames {
			if i > 0 {
				out = append(out, ',')
			}
			var err error
			if out, err = appendStackFrame(out, &b.StackFrames[i]); err != nil {
				return nil, err
			}
		}
		out = append(out, ']')
	}
	if b.TotalFrames != 0 {
		out = append(out, `,"totalFrames":`...)
		out = strconv.AppendInt(out, int64(b.TotalFrames), 10)
	}
	return append(out, '}'), nil
}

func appendStackFrame(out []byte, f *godap.StackFrame) ([]byte, error) {
	var err error
	out = append(out, `{"id":`...)
	out = strconv.AppendInt(out, int64(f.Id), 10)
	out = append(out, `,"name":`...)
	out = appendJSONString(out, f.Name)
	if f.Source != nil {
		out = append(out, `,"source":`...)
		if out, err = appendSource(out, f.Source); err != nil {
			return nil, err
		}
	}
	out = append(out, `,"line":`...)
	out = strconv.AppendInt(out, int64(f.Line), 10)
	out = append(out, `,"column":`...)
	out = strconv.AppendInt(out, int64(f.Column), 10)
	if f.EndLine != 0 {
		out = append(out, `,"endLine":`...)
		out = strconv.AppendInt(out, int64(f.EndLine), 10)
	}
	if f.EndColumn != 0 {
		out = append(out, `,"endColumn":`...)
		out = strconv.AppendInt(out, int64(f.EndColumn), 10)
	}
	if f.CanRestart {
		out = append(out, `,"canRestart":true`...)
	}
	if f.InstructionPointerReference != "" {
		out = append(out, `,"instructionPointerReference":`...)
		out = appendJSONString(out, f.InstructionPointerReference)
	}
	if f.ModuleId != nil {
		out = append(out, `,"moduleId":`...)
		if s, ok := f.ModuleId.(string); ok {
			out = appendJSONString(out, s)
		} else {
			b, err := json.Marshal(f.ModuleId)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
	}
	if f.PresentationHint != "" {
		out = append(out, `,"presentationHint":`...)
		out = appendJSONString(out, f.PresentationHint)
	}
	return append(out, '}'), nil
}

func appendSource(out []byte, s *godap.Source) ([]byte, error) {
	if len(s.Sources) > 0 || len(s.AdapterData) > 0 || len(s.Checksums) > 0 {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		return append(out, b...), nil
	}
	out = append(out, '{')
	sep := false
	field := func(name string) {
		if sep {
			out = append(out, ',')
		}
		sep = true
		out = append(out, '"')
		out = append(out, name...)
		out = append(out, `":`...)
	}
	if s.Name != "" {
		field("name")
		out = appendJSONString(out, s.Name)
	}
	if s.Path != "" {
		field("path")
		out = appendJSONString(out, s.Path)
	}
	if s.SourceReference != 0 {
		field("sourceReference")
		out = strconv.AppendInt(out, int64(s.SourceReference), 10)
	}
	if s.PresentationHint != "" {
		field("presentationHint")
		out = appendJSONString(out, s.PresentationHint)
	}
	if s.Origin != "" {
		field("origin")
		out = appendJSONString(out, s.Origin)
	}
	return append(out, '}'), nil
}
