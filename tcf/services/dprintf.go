package services

import (
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/variables"
)

// DPrintf is dynamic printf: the debugger function $printf(format, args...)
// formats its arguments in the agent, C printf style, and writes the text to
// the "DPrintf" stream of every client that opened one (through the Streams
// service). Eclipse turns a dynamic-printf breakpoint into a breakpoint whose
// Condition is `$printf("fmt", args)` or `(cond) && $printf("fmt", args)`;
// $printf's value is 0, so the condition is false and the thread goes on
// without a visible stop, as with the C agent.
//
// Conditions are evaluated by the Expressions service's evaluator, which has
// no function calls: this file wraps it, splitting a condition at its
// top-level && and running each $printf(...) conjunct itself, left to right
// with C's short circuit. Arguments are expressions evaluated in the stopped
// thread's top frame.

// maxPrintfString bounds what one %s reads from the target.
const maxPrintfString = 4096

// maxPrintfOutput bounds the text of one $printf call.
const maxPrintfOutput = 64 << 10

// dprintfState is the DPrintf stream each channel opened.
type dprintfState struct {
	mu      sync.Mutex
	streams map[*tcf.Channel]*stream
}

var dprintfData sync.Map // *Agent → *dprintfState

func (a *Agent) dprintf() *dprintfState {
	if v, ok := dprintfData.Load(a); ok {
		return v.(*dprintfState)
	}
	v, _ := dprintfData.LoadOrStore(a, &dprintfState{streams: map[*tcf.Channel]*stream{}})
	return v.(*dprintfState)
}

// RegisterDPrintf adds the DPrintf service and makes breakpoint conditions
// understand $printf. Call it after RegisterStreams and RegisterExpressions
// (it wraps the condition evaluator the latter installs).
func (a *Agent) RegisterDPrintf() {
	a.bps.mu.Lock()
	prev := a.bps.condition
	a.bps.mu.Unlock()
	a.SetConditionEvaluator(func(thread *target.Context, text string) (bool, error) {
		return a.dprintfCondition(thread, text, prev)
	})
	svc := a.srv.Service("DPrintf")
	svc.Command("open", func(c *tcf.Call) {
		args := c.Args()
		_ = args.Props() // stream properties: none are defined
		if err := args.End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		s, err := a.openDPrintf(c.Channel())
		if err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		c.Reply().Error(nil).String(s.id).Send()
	})
	svc.Command("close", func(c *tcf.Call) {
		if err := c.Args().End(); err != nil {
			c.ReplyError(err)
			return
		}
		a.closeDPrintf(c.Channel())
		c.ReplyError(nil)
	})
}

// openDPrintf returns the channel's DPrintf stream, making it on first use
// (or when the client disconnected the previous one).
func (a *Agent) openDPrintf(ch *tcf.Channel) (*stream, error) {
	d := a.dprintf()
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.streams[ch]; s != nil && a.stream(s.id) == s {
		return s, nil
	}
	s := a.newStream("DPrintf", "")
	if s == nil {
		return nil, tcf.Errorf(tcf.CodeUnsupported, "DPrintf needs the Streams service")
	}
	if _, had := d.streams[ch]; !had {
		ch.OnClose(func() { a.closeDPrintf(ch) })
	}
	d.streams[ch] = s
	return s, nil
}

// closeDPrintf ends the channel's stream: readers get end of stream, and
// further output is not kept for it.
func (a *Agent) closeDPrintf(ch *tcf.Channel) {
	d := a.dprintf()
	d.mu.Lock()
	s := d.streams[ch]
	d.streams[ch] = nil
	d.mu.Unlock()
	if s == nil {
		return
	}
	s.finish()
	st := &a.streams
	st.mu.Lock()
	_, ok := st.streams[s.id]
	if ok && s.eosRead() {
		delete(st.streams, s.id)
	}
	st.mu.Unlock()
}

// eosRead reports whether nothing is left to read from a finished stream.
func (s *stream) eosRead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eos && len(s.buf) == 0
}

// writeDPrintf appends text to every open DPrintf stream.
func (a *Agent) writeDPrintf(text string) {
	if text == "" {
		return
	}
	d := a.dprintf()
	d.mu.Lock()
	var out []*stream
	for _, s := range d.streams {
		if s != nil {
			out = append(out, s)
		}
	}
	d.mu.Unlock()
	for _, s := range out {
		s.append([]byte(text))
	}
}

// dprintfCondition evaluates a breakpoint condition that may call $printf.
func (a *Agent) dprintfCondition(thread *target.Context, text string, prev ConditionEvaluator) (bool, error) {
	if !strings.Contains(text, "$printf") {
		if prev == nil {
			return false, tcf.Errorf(tcf.CodeUnsupported, "no expression service to evaluate %q", text)
		}
		return prev(thread, text)
	}
	conj, err := splitTop(text, "&&")
	if err != nil {
		return false, err
	}
	for _, part := range conj {
		if args, ok, err := printfCall(part); err != nil {
			return false, err
		} else if ok {
			out, err := a.evalPrintf(thread, args)
			if err != nil {
				return false, err
			}
			a.writeDPrintf(out)
			return false, nil // $printf is 0: the && chain stops here
		}
		if strings.Contains(part, "$printf") {
			return false, &printfError{msg: "$printf can only be called at the top level of a condition (cond && $printf(...))"}
		}
		if prev == nil {
			return false, tcf.Errorf(tcf.CodeUnsupported, "no expression service to evaluate %q", part)
		}
		ok, err := prev(thread, part)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// evalPrintf evaluates $printf's arguments in the thread's top frame and
// formats them.
func (a *Agent) evalPrintf(thread *target.Context, args []string) (string, error) {
	format, err := cStringLiteral(args[0])
	if err != nil {
		return "", err
	}
	vals := make([]printfArg, 0, len(args)-1)
	if len(args) > 1 {
		a.forgetStack(thread)
		ee, err := a.scopeEnv(frameID(0, thread))
		if err != nil {
			return "", err
		}
		for _, src := range args[1:] {
			r, err := expr.Eval(src, ee.env)
			if err != nil {
				return "", err
			}
			vals = append(vals, resultArg{r: r, mem: thread})
		}
	}
	return formatPrintf(format, vals)
}

// printfError is a malformed $printf call or format.
type printfError struct{ msg string }

func (e *printfError) Error() string { return e.msg }

// TCFCode makes it an invalid-expression error (the C agent's code).
func (e *printfError) TCFCode() int { return tcf.CodeInvalidExpression }

// printfCall recognises `$printf(args)` and splits its arguments.
func printfCall(s string) ([]string, bool, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, "$printf")
	if !ok {
		return nil, false, nil
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return nil, false, &printfError{msg: "$printf needs an argument list: $printf(\"format\", ...)"}
	}
	inner := rest[1 : len(rest)-1]
	// The parentheses must enclose the whole list: in "$printf(a)+(b)" the
	// inner text "a)+(b" does not balance.
	args, err := splitTop(inner, ",")
	if err != nil {
		return nil, false, &printfError{msg: "$printf: " + err.Error()}
	}
	if len(args) == 0 || strings.TrimSpace(args[0]) == "" {
		return nil, false, &printfError{msg: "$printf needs a format string"}
	}
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
		if args[i] == "" {
			return nil, false, &printfError{msg: "$printf: empty argument " + strconv.Itoa(i+1)}
		}
	}
	return args, true, nil
}

// splitTop splits s at every sep outside parentheses, brackets, braces and
// string or character literals.
func splitTop(s, sep string) ([]string, error) {
	var parts []string
	depth := 0
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return nil, &printfError{msg: "unterminated literal at offset " + strconv.Itoa(i)}
			}
			i = j
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth < 0 {
				return nil, &printfError{msg: "unbalanced " + string(c) + " at offset " + strconv.Itoa(i)}
			}
		default:
			if depth == 0 && strings.HasPrefix(s[i:], sep) {
				parts = append(parts, s[start:i])
				i += len(sep) - 1
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, &printfError{msg: "unbalanced parentheses"}
	}
	return append(parts, s[start:]), nil
}

// cStringLiteral decodes one or more adjacent C string literals.
func cStringLiteral(s string) (string, error) {
	var b strings.Builder
	s = strings.TrimSpace(s)
	if s == "" || s[0] != '"' {
		return "", &printfError{msg: "$printf's format must be a string literal, not " + strconv.Quote(s)}
	}
	for s != "" {
		if s[0] != '"' {
			return "", &printfError{msg: "unexpected " + strconv.Quote(s) + " after the format string"}
		}
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' {
				b.WriteByte(s[i])
				continue
			}
			i++
			if i >= len(s) {
				break
			}
			switch c := s[i]; c {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'v':
				b.WriteByte('\v')
			case 'e':
				b.WriteByte(0x1b)
			case 'x':
				v, n := 0, 0
				for i+1 < len(s) && n < 2 && isHex(s[i+1]) {
					i++
					v = v*16 + hexVal(s[i])
					n++
				}
				if n == 0 {
					return "", &printfError{msg: `\x without hex digits in the format`}
				}
				b.WriteByte(byte(v))
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := int(c - '0')
				for n := 1; n < 3 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7'; n++ {
					i++
					v = v*8 + int(s[i]-'0')
				}
				b.WriteByte(byte(v))
			default: // \\ \" \' \? and anything else stand for themselves
				b.WriteByte(c)
			}
		}
		if i >= len(s) {
			return "", &printfError{msg: "unterminated format string"}
		}
		s = strings.TrimSpace(s[i+1:])
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

// printfArg is one evaluated $printf argument.
type printfArg interface {
	// Int returns the value as an integer (floats are truncated).
	Int() (int64, error)
	// Float returns the value as a floating-point number.
	Float() (float64, error)
	// IsFloat says the value is floating-point.
	IsFloat() bool
	// String returns the C string the value points to (or holds, for a char
	// array), at most max bytes.
	String(max int) (string, error)
}

// resultArg is an expression result read through the stopped thread.
type resultArg struct {
	r   *expr.Result
	mem *target.Context
}

func (v resultArg) IsFloat() bool {
	t := v.r.Type.Strip()
	return t != nil && t.Kind == variables.KindBase && t.Encoding == variables.EncFloat
}

func (v resultArg) Int() (int64, error) {
	if v.IsFloat() {
		f, err := v.r.Float()
		return int64(f), err
	}
	if v.r.Value == nil && v.r.LoadErr != nil {
		return 0, v.r.LoadErr
	}
	if t := v.r.Type.Strip(); t != nil && t.Kind == variables.KindArray && v.r.HasAddress {
		return int64(v.r.Address), nil // an array decays to its address
	}
	return v.r.Int()
}

func (v resultArg) Float() (float64, error) {
	if v.IsFloat() {
		return v.r.Float()
	}
	n, err := v.Int()
	return float64(n), err
}

func (v resultArg) String(max int) (string, error) {
	t := v.r.Type.Strip()
	if t != nil && t.Kind == variables.KindArray && v.r.Value != nil {
		b := v.r.Value
		if i := strings.IndexByte(string(b), 0); i >= 0 {
			b = b[:i]
		}
		if len(b) > max {
			b = b[:max]
		}
		return string(b), nil
	}
	addr, err := v.Int()
	if err != nil {
		return "", err
	}
	if addr == 0 {
		return "(null)", nil
	}
	return readCString(v.mem, uint64(addr), max)
}

// readCString reads a NUL-terminated string of at most max bytes, in small
// chunks so a string at the end of a mapping still reads.
func readCString(c *target.Context, addr uint64, max int) (string, error) {
	var out []byte
	buf := make([]byte, 64)
	for len(out) < max {
		chunk := buf
		// Stay within the page: the next one may be unmapped.
		if rem := int(4096 - addr%4096); rem < len(chunk) {
			chunk = chunk[:rem]
		}
		n, err := c.ReadMemory(addr, chunk)
		if i := strings.IndexByte(string(chunk[:n]), 0); i >= 0 {
			out = append(out, chunk[:i]...)
			break
		}
		out = append(out, chunk[:n]...)
		if err != nil || n == 0 {
			if len(out) == 0 {
				return "", &printfError{msg: "cannot read the string at 0x" + strconv.FormatUint(addr, 16)}
			}
			break
		}
		addr += uint64(n)
	}
	if len(out) > max {
		out = out[:max]
	}
	return string(out), nil
}

// formatPrintf formats args by a C printf format: flags (-+ #0), width and
// precision (numbers or *), length modifiers (hh h l ll z j t L q), and the
// conversions d i u o x X c s p f F e E g G a A and %%. %n is refused.
func formatPrintf(format string, args []printfArg) (string, error) {
	var b strings.Builder
	next := 0
	arg := func() (printfArg, error) {
		if next >= len(args) {
			return nil, &printfError{msg: "$printf: too few arguments for the format"}
		}
		next++
		return args[next-1], nil
	}
	for i := 0; i < len(format); i++ {
		if b.Len() > maxPrintfOutput {
			return "", &printfError{msg: "$printf: output longer than " + strconv.Itoa(maxPrintfOutput) + " bytes"}
		}
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", &printfError{msg: "$printf: format ends with %"}
		}
		if format[i] == '%' {
			b.WriteByte('%')
			continue
		}
		var spec printfSpec
		for ; i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0; i++ {
			spec.flags += string(format[i])
		}
		num := func() (int, bool, error) {
			if i < len(format) && format[i] == '*' {
				i++
				a, err := arg()
				if err != nil {
					return 0, false, err
				}
				n, err := a.Int()
				return int(n), true, err
			}
			n, has := 0, false
			for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
				n = n*10 + int(format[i]-'0')
				has = true
				if n > maxPrintfOutput {
					return 0, false, &printfError{msg: "$printf: width or precision too large"}
				}
			}
			return n, has, nil
		}
		var err error
		if spec.width, spec.hasWidth, err = num(); err != nil {
			return "", err
		}
		if spec.width < 0 { // a negative * width means left-justified
			spec.flags += "-"
			spec.width = -spec.width
		}
		if i < len(format) && format[i] == '.' {
			i++
			if spec.prec, _, err = num(); err != nil {
				return "", err
			}
			spec.hasPrec = spec.prec >= 0
		}
		if spec.width > maxPrintfOutput || spec.prec > maxPrintfOutput {
			return "", &printfError{msg: "$printf: width or precision too large"}
		}
		spec.bits = 32
		for ; i < len(format) && strings.IndexByte("hlLqjzt", format[i]) >= 0; i++ {
			switch format[i] {
			case 'h':
				if spec.bits == 16 {
					spec.bits = 8
				} else {
					spec.bits = 16
				}
			default:
				spec.bits = 64
			}
		}
		if i >= len(format) {
			return "", &printfError{msg: "$printf: incomplete conversion at the end of the format"}
		}
		spec.conv = format[i]
		a, err := arg()
		if err != nil {
			return "", err
		}
		s, err := spec.format(a)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
	}
	if b.Len() > maxPrintfOutput {
		return "", &printfError{msg: "$printf: output longer than " + strconv.Itoa(maxPrintfOutput) + " bytes"}
	}
	return b.String(), nil
}

// printfSpec is one parsed conversion.
type printfSpec struct {
	flags             string
	width, prec       int
	hasWidth, hasPrec bool
	bits              int // integer length: 8, 16, 32, 64
	conv              byte
}

func (p *printfSpec) format(a printfArg) (string, error) {
	switch p.conv {
	case 'd', 'i':
		n, err := a.Int()
		if err != nil {
			return "", err
		}
		if p.bits < 64 {
			shift := 64 - uint(p.bits)
			n = n << shift >> shift
		}
		return p.pad(p.number(strconv.FormatUint(abs64(n), 10), n < 0, "")), nil
	case 'u', 'o', 'x', 'X':
		n, err := a.Int()
		if err != nil {
			return "", err
		}
		u := uint64(n)
		if p.bits < 64 {
			u &= 1<<uint(p.bits) - 1
		}
		base, prefix := 10, ""
		switch p.conv {
		case 'o':
			base = 8
		case 'x', 'X':
			base = 16
			if strings.Contains(p.flags, "#") && u != 0 {
				prefix = "0x"
			}
		}
		digits := strconv.FormatUint(u, base)
		if p.conv == 'o' && strings.Contains(p.flags, "#") && digits[0] != '0' {
			digits = "0" + digits
		}
		s := p.number(digits, false, prefix)
		if p.conv == 'X' {
			s = strings.ToUpper(s)
		}
		return p.pad(s), nil
	case 'p':
		n, err := a.Int()
		if err != nil {
			return "", err
		}
		if n == 0 {
			return p.pad("(nil)"), nil
		}
		return p.pad("0x" + strconv.FormatUint(uint64(n), 16)), nil
	case 'c':
		n, err := a.Int()
		if err != nil {
			return "", err
		}
		return p.pad(string([]byte{byte(n)})), nil
	case 's':
		max := maxPrintfString
		if p.hasPrec && p.prec < max {
			max = p.prec
		}
		s, err := a.String(max)
		if err != nil {
			return "", err
		}
		return p.pad(s), nil
	case 'f', 'F', 'e', 'E', 'g', 'G', 'a', 'A':
		f, err := a.Float()
		if err != nil {
			return "", err
		}
		return p.pad(p.float(f)), nil
	case 'n':
		return "", &printfError{msg: "$printf: %n is not supported"}
	}
	return "", &printfError{msg: "$printf: unknown conversion %" + string(p.conv)}
}

func abs64(n int64) uint64 {
	if n < 0 {
		return uint64(-n)
	}
	return uint64(n)
}

// number applies precision (minimum digits), sign and zero padding to
// integer digits.
func (p *printfSpec) number(digits string, neg bool, prefix string) string {
	if p.hasPrec {
		if p.prec == 0 && digits == "0" {
			digits = ""
		}
		for len(digits) < p.prec {
			digits = "0" + digits
		}
	}
	sign := ""
	switch {
	case neg:
		sign = "-"
	case strings.Contains(p.flags, "+") && (p.conv == 'd' || p.conv == 'i'):
		sign = "+"
	case strings.Contains(p.flags, " ") && (p.conv == 'd' || p.conv == 'i'):
		sign = " "
	}
	if strings.Contains(p.flags, "0") && !strings.Contains(p.flags, "-") && !p.hasPrec {
		for len(sign)+len(prefix)+len(digits) < p.width {
			digits = "0" + digits
		}
	}
	return sign + prefix + digits
}

// float formats like C: %g trims trailing zeros unless #, infinities and NaNs
// are inf and nan.
func (p *printfSpec) float(f float64) string {
	lower := p.conv | 0x20
	if math.IsInf(f, 0) || math.IsNaN(f) {
		s := "inf"
		if math.IsNaN(f) {
			s = "nan"
		}
		if math.Signbit(f) {
			s = "-" + s
		} else if strings.Contains(p.flags, "+") {
			s = "+" + s
		}
		if p.conv < 'a' {
			s = strings.ToUpper(s)
		}
		return s
	}
	prec := 6
	if p.hasPrec {
		prec = p.prec
	}
	var s string
	switch lower {
	case 'f':
		s = strconv.FormatFloat(f, 'f', prec, 64)
	case 'e':
		s = strconv.FormatFloat(f, 'e', prec, 64) // e+06: at least two exponent digits, as C
	case 'g':
		if prec == 0 {
			prec = 1
		}
		exp := 0
		if f != 0 {
			// The exponent %e would have at this precision.
			e := strconv.FormatFloat(f, 'e', prec-1, 64)
			exp, _ = strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
		}
		if exp < -4 || exp >= prec {
			s = strconv.FormatFloat(f, 'e', prec-1, 64)
			if !strings.Contains(p.flags, "#") {
				m, e, _ := strings.Cut(s, "e")
				s = trimZeros(m) + "e" + e
			}
		} else {
			s = strconv.FormatFloat(f, 'f', prec-1-exp, 64)
			if !strings.Contains(p.flags, "#") {
				s = trimZeros(s)
			}
		}
	case 'a':
		if p.hasPrec {
			s = strconv.FormatFloat(f, 'x', prec, 64)
		} else {
			s = strconv.FormatFloat(f, 'x', -1, 64)
		}
		// Go writes the exponent with at least two digits; C with one.
		if m, e, ok := strings.Cut(s, "p"); ok {
			sign, digits := e[:1], strings.TrimLeft(e[1:], "0")
			if digits == "" {
				digits = "0"
			}
			s = m + "p" + sign + digits
		}
	}
	if f >= 0 && !math.Signbit(f) {
		if strings.Contains(p.flags, "+") {
			s = "+" + s
		} else if strings.Contains(p.flags, " ") {
			s = " " + s
		}
	}
	if strings.Contains(p.flags, "0") && !strings.Contains(p.flags, "-") {
		sign := ""
		if s != "" && (s[0] == '-' || s[0] == '+' || s[0] == ' ') {
			sign, s = s[:1], s[1:]
		}
		for len(sign)+len(s) < p.width {
			s = "0" + s
		}
		s = sign + s
	}
	if p.conv < 'a' {
		s = strings.ToUpper(s)
	}
	return s
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// pad applies the width: right-justified unless the - flag.
func (p *printfSpec) pad(s string) string {
	if len(s) >= p.width {
		return s
	}
	fill := strings.Repeat(" ", p.width-len(s))
	if strings.Contains(p.flags, "-") {
		return s + fill
	}
	return fill + s
}
