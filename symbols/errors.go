package symbols

import "fmt"

// Error is a failure to read a file's symbolic information. It names the file
// and wraps the cause (often a *dwarf.FormatError or an *elf.FormatError).
type Error struct {
	File string // path (or name) of the file that is unreadable
	Op   string // what was being done, e.g. "open", "read compile unit at 0x1234"
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("symbols: %s: %s: %v", e.File, e.Op, e.Err) }

func (e *Error) Unwrap() error { return e.Err }
