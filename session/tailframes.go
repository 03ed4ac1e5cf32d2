package session

import (
	"fmt"

	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/variables"
)

// Frames for the tail-call frames of a backtrace (tailcall.go), so that
// their arguments are read and entry values are recovered through them, as
// gdb does (gdb/dwarf2/frame-tailcall.c): a function that ended in a jump
// has no frame of its own, but its parameters' locations at the jump are
// usually entry values (DW_OP_entry_value(reg)), and the function it jumped
// to finds its own entry values in the jump's call site
// (DW_TAG_call_site with DW_AT_call_tail_call).
//
// A tail-call frame's pc is the address after the jump; every other
// register is its caller's (the registers unwound from the frame below the
// chain: the jump changed none of them that the caller can rely on); its
// CFA is the CFA of the frame below the chain (the jump reused that frame's
// return address slot).

// tailFramesOf returns, for each physical frame index, the first of the
// tail-call frames between it and its caller, the frames chained through
// Frame.next innermost first (made once per Stack).
func (st *Stack) tailFramesOf() map[int]*Frame {
	st.tailOnce.Do(func() {
		var last *Frame
		for i, tf := range st.trace.Frames {
			if tf.Kind != unwind.KindTailCall {
				last = nil
				continue
			}
			callee := st.Frame(tf.Physical)
			if callee == nil {
				continue
			}
			f := &Frame{stack: st, index: tf.Physical, tail: true, trace: i,
				uf: unwind.Frame{PC: tf.PC, SP: tf.SP, CFA: callee.uf.CFA, Kind: unwind.KindNormal}}
			f.mod = st.mods.ForAddress(f.lookupPC())
			if last != nil {
				last.next = f
			} else {
				if st.tails == nil {
					st.tails = map[int]*Frame{}
				}
				st.tails[tf.Physical] = f
			}
			last = f
		}
	})
	return st.tails
}

// TailFrame returns the frame of backtrace frame i when it is a tail-call
// frame (nil otherwise).
func (st *Stack) TailFrame(i int) *Frame {
	if i < 0 || i >= len(st.trace.Frames) || st.trace.Frames[i].Kind != unwind.KindTailCall {
		return nil
	}
	for f := st.tailFramesOf()[st.trace.Frames[i].Physical]; f != nil; f = f.next {
		if f.trace == i {
			return f
		}
	}
	return nil
}

// TailCall reports whether the frame is a tail-call frame
// (variables.TailCallFrame): its pc is the address after a jump, matched
// by a tail call's call site.
func (f *Frame) TailCall() bool { return f.tail }

// caller is the frame that called f: the next tail-call frame of the chain
// above f, else the next physical frame.
func (f *Frame) caller() *Frame {
	if f.tail {
		if f.next != nil {
			return f.next
		}
		return f.stack.Frame(f.index + 1)
	}
	if t := f.stack.tailFramesOf()[f.index]; t != nil {
		return t
	}
	return f.stack.Frame(f.index + 1)
}

// tailRegister reads a register of a tail-call frame: its caller's.
func (f *Frame) tailRegister(reg int) ([]byte, error) {
	c := f.stack.Frame(f.index + 1)
	if c == nil {
		return nil, fmt.Errorf("session: tail-call frame %#x has no caller: %w", f.uf.PC, variables.ErrOptimizedOut)
	}
	return c.Register(reg)
}
