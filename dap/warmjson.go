package dap

import (
	"encoding/json"

	godap "github.com/google/go-dap"
)

// warmJSON decodes and encodes, once, the arguments and responses of the
// round every client asks at a stop (stackTrace, scopes, variables):
// encoding/json builds its description of a type (typeFields, its
// encoder) the first time it sees it: a sixth of the first variables'
// CPU by a profile. The launch runs it with its
// read-ahead, while the program starts; nothing of a target is involved.
func warmJSON() {
	for _, a := range []any{&godap.StackTraceArguments{}, &godap.ScopesArguments{}, &godap.VariablesArguments{}, &godap.ContinueArguments{}, &godap.NextArguments{}} {
		json.Unmarshal([]byte(`{}`), a)
	}
	for _, body := range []any{
		godap.ScopesResponseBody{Scopes: []godap.Scope{{}}},
		godap.VariablesResponseBody{Variables: []godap.Variable{{}}},
	} {
		json.Marshal(&response{Body: body})
	}
}
