package profiling

import (
	"fmt"
	"io"
	"strconv"
)

// WriteScript writes one sample the way `perf script` does: a line naming
// the thread, the time and the period, one line per frame (address,
// function+offset, module; "(inlined)" instead of the module for inline
// frames), and a blank line.
func WriteScript(w io.Writer, s *Sample) error {
	comm := s.Comm
	if comm == "" {
		comm = "[unknown]"
	}
	if _, err := fmt.Fprintf(w, "%s %7d %d.%06d: %10d cpu-clock:\n", comm, s.TID, s.Time/1e9, s.Time%1e9/1e3, s.Period); err != nil {
		return err
	}
	for i := range s.Frames {
		f := &s.Frames[i]
		where := "(unknown)"
		switch {
		case f.Inlined:
			where = "(inlined)"
		case f.Module != "":
			where = "(" + f.Module + ")"
		}
		if _, err := fmt.Fprintf(w, "\t%16x %s %s\n", f.PC, ScriptName(f), where); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// ScriptName is a frame's name as perf script prints it: function+0xOFFSET
// from the start of the symbol holding the address, [unknown] without one.
func ScriptName(f *Frame) string {
	if f.Function == "" {
		return "[unknown]"
	}
	if !f.HasOffset {
		return f.Function
	}
	return f.Function + "+0x" + strconv.FormatUint(f.Offset, 16)
}
