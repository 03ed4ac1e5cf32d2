package profiling

import (
	"fmt"
	"io"
	"strconv"

	"github.com/sondedbg/sonde/perfdata"
)

// Script writes samples the way `perf script` does by default: a line
// naming the thread, the CPU (system-wide recordings), the time, the period
// and the event, one line per frame (address, function+offset, module;
// "(inlined)" instead of the module for inline frames), and a blank line.
type Script struct {
	w     io.Writer
	width int // the longest event name, as perf pads them
}

// NewScript makes a Script writing to w the samples of a recording with
// header h (nil: event names unpadded).
func NewScript(w io.Writer, h *perfdata.Header) *Script {
	s := &Script{w: w}
	if h != nil {
		for _, a := range h.Attrs {
			s.width = max(s.width, len(eventName(a)))
		}
	}
	return s
}

// WriteScript writes one sample as Script does, its event name unpadded.
func WriteScript(w io.Writer, s *Sample) error { return (&Script{w: w}).Write(s) }

// Write writes one sample.
func (sc *Script) Write(s *Sample) error {
	comm := s.Comm
	if comm == "" {
		comm = ":" + strconv.Itoa(int(int32(s.TID)))
	}
	cpu := ""
	if s.HasCPU {
		cpu = fmt.Sprintf("[%03d] ", s.CPU)
	}
	event := s.Event
	if event == "" {
		event = "[unknown]"
	}
	if _, err := fmt.Fprintf(sc.w, "%s %5d %s%5d.%06d: %10d %*s: \n", comm, int32(s.TID), cpu, s.Time/1e9, s.Time%1e9/1e3, s.Period, sc.width, event); err != nil {
		return err
	}
	for i := range s.Frames {
		f := &s.Frames[i]
		where := "([unknown])"
		switch {
		case f.Inlined:
			where = "(inlined)"
		case f.Module != "":
			where = "(" + f.Module + ")"
		}
		if _, err := fmt.Fprintf(sc.w, "\t%16x %s %s\n", f.PC, ScriptName(f), where); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(sc.w)
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
