package symbols

import "fmt"

// Files are memory-mapped. If one is truncated on disk while open (cp over
// a binary being debugged), touching a page past its new end raises SIGBUS,
// which would kill the process. Every public method therefore runs with
// debug.SetPanicOnFault and turns such a fault into an error naming the file:
//
//	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
//	defer b.catchFault(&err)
//
// The answer of that call is lost; the Binary stays usable for parts already
// decoded, and the caller should reopen the file.
func (b *Binary) catchFault(err *error) { catchFault(b.path, recover(), err) }

func catchFault(file string, r any, err *error) {
	if r == nil {
		return
	}
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		*err = &Error{File: file, Op: "read mapped file", Err: fmt.Errorf("%v (was the file changed on disk?)", r)}
		return
	}
	panic(r)
}
