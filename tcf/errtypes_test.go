package tcf_test

import (
	"fmt"
	"syscall"
)

type errString string

func (e errString) Error() string { return string(e) }

// addrError is shaped like a lower layer's typed error: it knows its TCF
// code without importing tcf, and wraps an errno.
type addrError struct {
	addr uint64
	err  error
}

func (e *addrError) Error() string { return fmt.Sprintf("read %#x: %v", e.addr, e.err) }
func (e *addrError) Unwrap() error { return e.err }
func (e *addrError) TCFCode() int  { return 17 }

func wrapErrno() error { return &addrError{addr: 0x10, err: syscall.EIO} }

type fsErr struct{}

func (fsErr) Error() string      { return "no such file" }
func (fsErr) TCFCode() int       { return 0x10002 }
func (fsErr) TCFService() string { return "FileSystem" }
