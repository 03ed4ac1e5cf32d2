package self

import "unsafe"

// uintptrOf is the current address of a stack variable: it changes when Go
// moves the goroutine's stack.
//
//go:noinline
func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
