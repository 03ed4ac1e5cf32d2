package dap

import "github.com/sondedbg/sonde/variables"

// through returns a view of fe for one request whose reads of the target
// go through mem (a requestFrame: each page read once for the request).
// The frame's environment is kept per stop and shared by requests, so the
// view is a copy: fe itself keeps reading the target directly.
func (fe *frameEnv) through(mem variables.Frame) *frameEnv {
	if fe == nil || fe.env == nil || mem == nil {
		return fe
	}
	c := *fe
	env := *fe.env
	env.Frame = mem
	c.env = &env
	return &c
}

// memory is what fe's values are read through: the request's view when
// there is one (through), else the frame.
func (fe *frameEnv) memory() variables.Frame {
	if fe.env != nil && fe.env.Frame != nil {
		return fe.env.Frame
	}
	if fe.frame == nil {
		return nil
	}
	return fe.frame
}
