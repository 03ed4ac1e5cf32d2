package target

// ResumeMode is how a context resumes. The values are TCF's RM_* numbers.
type ResumeMode int

const (
	ResumeContinue      ResumeMode = 0  // run until something stops it
	ResumeStepOver      ResumeMode = 1  // one instruction; a call runs to its return
	ResumeStepInto      ResumeMode = 2  // one instruction
	ResumeStepOverLine  ResumeMode = 3  // to the next line; calls run to their return
	ResumeStepIntoLine  ResumeMode = 4  // to the next line, entering calls that have line info
	ResumeStepOut       ResumeMode = 5  // until the current function returns to its caller
	ResumeStepOverRange ResumeMode = 12 // while the PC is in [RangeStart, RangeEnd); calls run to their return
	ResumeStepIntoRange ResumeMode = 13 // while the PC is in [RangeStart, RangeEnd)
	ResumeUntilActive   ResumeMode = 16 // TCF's RM_UNTIL_ACTIVE: unsupported on Linux
)

func (m ResumeMode) String() string {
	switch m {
	case ResumeContinue:
		return "continue"
	case ResumeStepOver:
		return "step over instruction"
	case ResumeStepInto:
		return "step into instruction"
	case ResumeStepOverLine:
		return "step over line"
	case ResumeStepIntoLine:
		return "step into line"
	case ResumeStepOut:
		return "step out"
	case ResumeStepOverRange:
		return "step over range"
	case ResumeStepIntoRange:
		return "step into range"
	}
	return "resume mode " + itoa(int(m))
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// ResumeModes is a set of modes as TCF's CanResume bitmask (bit n = mode n).
type ResumeModes uint64

func (s ResumeModes) Has(m ResumeMode) bool { return m >= 0 && m < 64 && s&(1<<uint(m)) != 0 }
func (s ResumeModes) With(m ResumeMode) ResumeModes {
	return s | 1<<uint(m)
}

// ResumeOptions qualify a resume.
type ResumeOptions struct {
	// Count repeats the step (1 when zero).
	Count int
	// RangeStart and RangeEnd bound the range-step modes.
	RangeStart, RangeEnd uint64
	// Signal, when non-zero, overrides the pending signal delivered on resume
	// (-1 delivers none).
	Signal Signal
}

// StepAdvisor supplies the source-level knowledge that line stepping and
// step-out need. The symbols and unwind layers implement it; target only calls
// it, so the model stays below them.
type StepAdvisor interface {
	// LineRange returns the line-table block holding pc, for stepping over or
	// into a line. ok is false when pc has no line information.
	LineRange(thread *Context, pc uint64) (r LineRange, ok bool)
	// Caller returns the return address and the canonical frame address (CFA) of
	// the innermost frame, for stepping out by frame identity.
	Caller(thread *Context) (returnAddress, cfa uint64, err error)
	// FrameCFA returns the CFA of the innermost frame.
	FrameCFA(thread *Context) (uint64, error)
}

// LineRange is the code of one source line around an address: [Start, End),
// the statement rows of File:Line that are contiguous with it.
type LineRange struct {
	Start, End uint64
	File       string
	Line       int
}

// Contains reports whether pc lies in the range.
func (r LineRange) Contains(pc uint64) bool { return pc >= r.Start && pc < r.End }

// SameLine reports whether o is the same source line.
func (r LineRange) SameLine(o LineRange) bool { return r.Line == o.Line && r.File == o.File }
