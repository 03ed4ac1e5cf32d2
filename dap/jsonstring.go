package dap

import "github.com/sondedbg/sonde/internal/jsonstr"

// appendJSONString appends s as json.Marshal writes it, HTML escaping and
// all: every other DAP message goes through json.Marshal, and the hand-made
// stackTrace responses promise its bytes (internal/jsonstr says why the
// protocols differ).
func appendJSONString(out []byte, s string) []byte { return jsonstr.AppendHTMLEscaped(out, s) }
