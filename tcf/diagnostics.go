package tcf

import (
	"strconv"
)

// RegisterDiagnostics adds the target-independent part of the Diagnostics
// service: echo, echoFP, echoINT and echoERR, which clients use to test the
// channel. Services over debug targets (getTestList, runTest, ...) register
// further commands on the same service with s.Service("Diagnostics").
func RegisterDiagnostics(s *Server) *Service {
	svc := s.Service("Diagnostics")
	// echo(s) → s, with no error field.
	svc.Command("echo", func(c *Call) {
		a := c.Args()
		str := a.String()
		if err := a.End(); err != nil {
			c.ReplyError(err)
			return
		}
		c.Reply().String(str).Send()
	})
	// echoFP(x) → x: the number is parsed as a double and written back in
	// its shortest exact form.
	svc.Command("echoFP", func(c *Call) {
		a := c.Args()
		raw := a.Raw()
		if err := a.End(); err != nil {
			c.ReplyError(err)
			return
		}
		if raw == nil {
			c.Reply().Null().Send()
			return
		}
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || !isJSONNumber(raw) {
			c.ReplyError(Errorf(CodeInvalidNumber, "echoFP: %q is not a finite number", raw))
			return
		}
		c.Reply().RawJSON(strconv.AppendFloat(nil, v, 'g', -1, 64)).Send()
	})
	// echoINT(type, v) → v; type 0: int32, 1: uint32, 2: int64, 3: uint64.
	svc.Command("echoINT", func(c *Call) {
		a := c.Args()
		typ := a.Int()
		var out []byte
		switch typ {
		case 0, 2:
			bits := 32
			if typ == 2 {
				bits = 64
			}
			f, ok := a.take("integer")
			if ok {
				v, err := parseInt(f, bits)
				if err != nil {
					a.fail(f, strconv.Itoa(bits)+"-bit signed integer", CodeInvalidNumber, err)
				}
				out = strconv.AppendInt(nil, v, 10)
			}
		case 1, 3:
			f, ok := a.take("unsigned integer")
			if ok {
				v, err := parseUint(f)
				if err == nil && typ == 1 && v > 1<<32-1 {
					err = errOutOfRange
				}
				if err != nil {
					a.fail(f, "unsigned integer", CodeInvalidNumber, err)
				}
				out = strconv.AppendUint(nil, v, 10)
			}
		default:
			if a.Err() == nil {
				c.ReplyError(Errorf(CodeInvalidNumber, "echoINT: unknown number type %d (want 0-3)", typ))
				return
			}
		}
		if err := a.End(); err != nil {
			c.ReplyError(err)
			return
		}
		c.Reply().RawJSON(out).Send()
	})
	// echoERR(report) → report, message: the report as received and its
	// human-readable text.
	svc.Command("echoERR", func(c *Call) {
		a := c.Args()
		rep := a.Report()
		if err := a.End(); err != nil {
			c.ReplyError(err)
			return
		}
		if rep == nil {
			c.Reply().Empty().String("").Send()
			return
		}
		c.Reply().Report(rep).String(rep.Message()).Send()
	})
	return svc
}

// isJSONNumber checks JSON number syntax (ParseFloat also takes "Inf",
// "0x1p3", "1_000", which JSON does not).
func isJSONNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i == len(b) {
		return false
	}
	if b[i] == '0' {
		i++
	} else if b[i] >= '1' && b[i] <= '9' {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(b)
}
