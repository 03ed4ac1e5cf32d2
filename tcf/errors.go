package tcf

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Standard TCF error codes (the "Code" field of an error report). Codes
// 0x10000-0x1ffff are service specific and need the report's Service field.
const (
	CodeOther             = 1
	CodeJSONSyntax        = 2
	CodeProtocol          = 3
	CodeBufferOverflow    = 4
	CodeChannelClosed     = 5
	CodeCommandCancelled  = 6
	CodeUnknownPeer       = 7
	CodeBase64            = 8
	CodeEOF               = 9
	CodeAlreadyStopped    = 10
	CodeAlreadyExited     = 11
	CodeAlreadyRunning    = 12
	CodeAlreadyAttached   = 13
	CodeIsRunning         = 14
	CodeInvalidDataSize   = 15
	CodeInvalidContext    = 16
	CodeInvalidAddress    = 17
	CodeInvalidExpression = 18
	CodeInvalidFormat     = 19
	CodeInvalidNumber     = 20
	CodeInvalidDWARF      = 21
	CodeSymbolNotFound    = 22
	CodeUnsupported       = 23
	CodeInvalidDataType   = 24
	CodeInvalidCommand    = 25
)

// Coder is implemented by errors that know their TCF error code. Lower layers
// implement it with a plain method (no import of tcf needed):
//
//	func (e *ContextError) TCFCode() int { return 16 }
//
// The outermost error in a wrap chain that implements Coder decides the code.
type Coder interface {
	TCFCode() int
}

// ServiceCoder is implemented by errors that carry a service-specific code
// (0x10000 and up); the report then names the service, as clients require.
type ServiceCoder interface {
	Coder
	TCFService() string
}

// ErrorReport is a TCF error report, the JSON object clients see in a reply's
// error field. The field order of the struct is the order on the wire (the C
// agent's: Code, Time, Format first).
type ErrorReport struct {
	Code     int            `json:"Code"`
	Time     int64          `json:"Time"`
	Service  string         `json:"Service,omitempty"`
	Format   string         `json:"Format,omitempty"`
	Params   []any          `json:"Params,omitempty"`
	Severity int            `json:"Severity,omitempty"`
	AltCode  int            `json:"AltCode,omitempty"`
	AltOrg   string         `json:"AltOrg,omitempty"`
	CausedBy *ErrorReport   `json:"CausedBy,omitempty"`
	Extra    map[string]any `json:"-"` // unknown fields kept by decoders
}

// Error formats the report's message: Format with {n} replaced by Params[n]
// (the subset of java.text.MessageFormat that TCF peers use), then the code.
func (r *ErrorReport) Error() string {
	msg := r.Message()
	if r.Service != "" {
		return fmt.Sprintf("%s (%s error %d)", msg, r.Service, r.Code)
	}
	return fmt.Sprintf("%s (TCF error %d)", msg, r.Code)
}

// TCFCode makes a report usable wherever a coded error is.
func (r *ErrorReport) TCFCode() int { return r.Code }

// Message returns the human-readable text of the report: Format with its
// parameters substituted, or a generic text for the code when Format is empty.
func (r *ErrorReport) Message() string {
	if r.Format == "" {
		return CodeText(r.Code)
	}
	if len(r.Params) == 0 || !strings.Contains(r.Format, "{") {
		return r.Format
	}
	var b strings.Builder
	f := r.Format
	for {
		i := strings.IndexByte(f, '{')
		if i < 0 {
			b.WriteString(f)
			break
		}
		j := strings.IndexByte(f[i:], '}')
		if j < 0 {
			b.WriteString(f)
			break
		}
		spec := f[i+1 : i+j]
		if k := strings.IndexByte(spec, ','); k >= 0 {
			spec = spec[:k] // "{0,number}" and the like: the value is enough
		}
		n, err := strconv.Atoi(spec)
		b.WriteString(f[:i])
		if err != nil || n < 0 || n >= len(r.Params) {
			b.WriteString(f[i : i+j+1])
		} else {
			fmt.Fprint(&b, r.Params[n])
		}
		f = f[i+j+1:]
	}
	return b.String()
}

var codeTexts = map[int]string{
	CodeOther:             "Unspecified failure",
	CodeJSONSyntax:        "JSON syntax error",
	CodeProtocol:          "Protocol format error",
	CodeBufferOverflow:    "Buffer overflow",
	CodeChannelClosed:     "Channel closed",
	CodeCommandCancelled:  "Command canceled",
	CodeUnknownPeer:       "Unknown peer",
	CodeBase64:            "Invalid BASE64 string",
	CodeEOF:               "End of file",
	CodeAlreadyStopped:    "Already stopped",
	CodeAlreadyExited:     "Already exited",
	CodeAlreadyRunning:    "Already running",
	CodeAlreadyAttached:   "Already attached",
	CodeIsRunning:         "Execution context is running",
	CodeInvalidDataSize:   "Invalid data size",
	CodeInvalidContext:    "Invalid context",
	CodeInvalidAddress:    "Invalid address",
	CodeInvalidExpression: "Invalid expression",
	CodeInvalidFormat:     "Invalid format",
	CodeInvalidNumber:     "Invalid number",
	CodeInvalidDWARF:      "Invalid DWARF data",
	CodeSymbolNotFound:    "Symbol not found",
	CodeUnsupported:       "Unsupported command",
	CodeInvalidDataType:   "Invalid data type",
	CodeInvalidCommand:    "Command is not recognized",
}

// CodeText is the standard message for a TCF error code.
func CodeText(code int) string {
	if s, ok := codeTexts[code]; ok {
		return s
	}
	return "Error code " + strconv.Itoa(code)
}

// CodedError is an error with a TCF code, made by [Errorf] or [NewError].
type CodedError struct {
	Code int
	Err  error
}

func (e *CodedError) Error() string { return e.Err.Error() }
func (e *CodedError) Unwrap() error { return e.Err }
func (e *CodedError) TCFCode() int  { return e.Code }

// Errorf returns an error with TCF code code and a message formatted as by
// fmt.Errorf (so %w wraps a cause).
func Errorf(code int, format string, args ...any) error {
	return &CodedError{Code: code, Err: fmt.Errorf(format, args...)}
}

// NewError returns an error with TCF code code and the standard text for it.
func NewError(code int) error {
	return &CodedError{Code: code, Err: errors.New(CodeText(code))}
}

// Report turns err into the error report sent to clients, or nil for a nil
// error. Rules, in order:
//   - an *ErrorReport anywhere in the chain is sent as is (Time filled if 0);
//   - the code comes from the outermost [Coder] in the chain, else
//     CodeCommandCancelled for context.Canceled, else CodeOther;
//   - a [ServiceCoder] adds the Service name;
//   - a syscall.Errno in the chain adds AltCode=errno, AltOrg="Linux";
//   - Format is err.Error().
func Report(err error, now time.Time) *ErrorReport {
	if err == nil {
		return nil
	}
	var rep *ErrorReport
	if errors.As(err, &rep) {
		if rep.Time != 0 {
			return rep
		}
		cp := *rep
		cp.Time = now.UnixMilli()
		return &cp
	}
	r := &ErrorReport{Code: CodeOther, Time: now.UnixMilli(), Format: err.Error()}
	var c Coder
	if errors.As(err, &c) {
		r.Code = c.TCFCode()
	} else if errors.Is(err, context.Canceled) {
		r.Code = CodeCommandCancelled // e.g. the channel closed under a long command
	}
	var sc ServiceCoder
	if errors.As(err, &sc) && sc.TCFCode() >= 0x10000 {
		r.Code = sc.TCFCode()
		r.Service = sc.TCFService()
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		r.AltCode = int(errno)
		r.AltOrg = "Linux"
	}
	return r
}
