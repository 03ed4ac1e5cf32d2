package session

import (
	"errors"

	"github.com/sondedbg/sonde/variables"
)

// summaryOnly reports whether an argument gdb's backtrace prints as "..."
// (print frame-arguments scalars: an array, struct or union) could not be
// read: gdb does not fetch such a value to print it, so an array whose size
// only the running program knows (a Fortran assumed-shape array, whose
// bounds are DWARF expressions over its descriptor) is "..." there, not an
// error.
func summaryOnly(v *variables.Variable, err error, fo variables.FormatOptions) bool {
	return err != nil && !errors.Is(err, variables.ErrOptimizedOut) && fo.Summary && !variables.IsScalar(v.Type)
}
