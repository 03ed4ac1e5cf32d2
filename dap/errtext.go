package dap

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/variables"
)

// userMessage is how an error is shown to an editor user: an expression's
// error in gdb's words (`No symbol "len" in current context`, `Cannot
// access memory at address 0x0`), without the package prefix, byte offset
// and the chain of causes that err.Error() spells for a log; other errors
// as they are.
func userMessage(err error) string {
	var me *variables.MemoryError
	if errors.As(err, &me) {
		return variables.ErrorMessage(me)
	}
	var xe *expr.Error
	if !errors.As(err, &xe) {
		return err.Error()
	}
	msg := xe.Msg
	if xe.Kind == expr.ErrSyntax {
		// Where the parse failed helps fix a typo.
		msg = "syntax error: " + msg
	}
	if xe.Err != nil && xe.Kind != expr.ErrMemory {
		var inner *expr.Error
		if errors.As(xe.Err, &inner) {
			msg += ": " + userMessage(inner)
		} else if !strings.Contains(msg, xe.Err.Error()) {
			msg += ": " + xe.Err.Error()
		}
	}
	r, n := utf8.DecodeRuneInString(msg)
	return string(unicode.ToUpper(r)) + msg[n:]
}
