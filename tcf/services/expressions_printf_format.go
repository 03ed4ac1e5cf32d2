package services

import (
	"math"
	"strconv"
	"strings"
)

// C printf formatting for $printf, done in the agent from values read in the
// target (see expressions_printf.go for where the values come from).

// maxPrintfString bounds what one %s reads from the target.
const maxPrintfString = 4096

// maxPrintfOutput bounds the text of one $printf call.
const maxPrintfOutput = 64 << 10

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

// formatPrintf formats args by a C printf format: flags (-+ #0), width and
// precision (numbers or *), length modifiers (hh h l ll z j t L q), and the
// conversions d i u o x X c C s p f F e E g G a A and %%. %n is refused.
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
	case 'c', 'C': // %C is %lc: the same for the ASCII a char holds
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
