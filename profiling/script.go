package profiling

import (
	"fmt"
	"io"
)

// WriteScript writes one sample the way `perf script` does: a line naming
// the thread, the time and the period, one line per frame (address,
// function, module; "(inlined)" for inline frames), and a blank line.
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
		mod := "unknown"
		if f.Module != "" {
			mod = f.Module
		}
		inl := ""
		if f.Inlined {
			inl = " (inlined)"
		}
		if _, err := fmt.Fprintf(w, "\t%16x %s%s (%s)\n", f.PC, FrameName(f), inl, mod); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}
