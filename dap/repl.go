package dap

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

// The debug console understands, besides expressions, what an IDE console
// is mostly used for, in gdb's spelling: bt, info registers, info locals,
// info args, x/NFU ADDR, print (p, p/x) and whatis.

var replCommands = []string{"bt", "backtrace", "info registers", "info locals", "info args", "x/", "print", "whatis"}

// replPrint strips gdb's print and whatis commands from a console line,
// which is then evaluated as an expression: "p/x v" is v in hex, "whatis v"
// asks for v's type. A line that is neither comes back as it is. Found
// typing "p/x a.kind_flags" in jq's console as one would in gdb's (it was
// "Syntax error: unexpected "a" after the expression").
func replPrint(text string, hex bool) (string, bool, bool, error) {
	word, rest, _ := strings.Cut(text, " ")
	cmd, format, hasFormat := strings.Cut(word, "/")
	rest = strings.TrimSpace(rest)
	switch cmd {
	case "p", "print", "output", "call":
	case "whatis", "ptype":
		if hasFormat {
			return "", false, false, errorf("%s takes no format", cmd)
		}
		if rest == "" {
			return "", false, false, errorf("%s: give an expression", cmd)
		}
		return rest, hex, true, nil
	default:
		return text, hex, false, nil
	}
	switch {
	case format == "x":
		hex = true
	case format == "d":
		hex = false
	case hasFormat:
		return "", false, false, errorf("%s: format /%s is not supported (/x, /d)", cmd, format)
	}
	if rest == "" {
		return "", false, false, errorf("%s: give an expression", cmd)
	}
	return rest, hex, false, nil
}

// replEvaluates reports whether a console line evaluates as an
// expression in the frame (with a variable p, "p + 1" does).
func (s *Server) replEvaluates(d *debuggee, frameID int, text string) bool {
	fe, _, err := s.evalEnv(d, frameID)
	if err != nil {
		return false
	}
	_, err = expr.Eval(text, fe.env)
	return err == nil
}

func evalText(text string, fe *frameEnv) (*expr.Result, error) { return expr.Eval(text, fe.env) }

// replCommand runs a console command; ok is false when text is none (it is
// then an expression).
func (s *Server) replCommand(d *debuggee, frameID int, text string) (string, bool, error) {
	word, rest, _ := strings.Cut(text, " ")
	switch {
	case word == "bt" || word == "backtrace" || word == "where":
		out, err := s.replBacktrace(d, frameID)
		return out, true, err
	case word == "info" && (strings.HasPrefix(strings.TrimSpace(rest), "reg") || strings.TrimSpace(rest) == "r"):
		out, err := s.replRegisters(d, frameID, strings.Fields(rest)[1:])
		return out, true, err
	case word == "i" && strings.TrimSpace(rest) == "r":
		out, err := s.replRegisters(d, frameID, nil)
		return out, true, err
	case strings.HasPrefix(text, "x/") || word == "x":
		out, err := s.replExamine(d, frameID, text)
		return out, true, err
	case word == "info" && (strings.TrimSpace(rest) == "locals" || strings.TrimSpace(rest) == "args"):
		out, err := s.replFrameVars(d, frameID, strings.TrimSpace(rest) == "args")
		return out, true, err
	}
	return "", false, nil
}

// replFrameVars is gdb's info locals (or info args): each variable of the
// frame as "name = value", "No locals." when it has none.
func (s *Server) replFrameVars(d *debuggee, frameID int, args bool) (string, error) {
	fe, _, err := s.evalEnv(d, frameID)
	if err != nil {
		return "", err
	}
	vars, none := fe.locals, "No locals."
	if args {
		vars, none = fe.args, "No arguments."
	}
	if len(vars) == 0 || fe.reader == nil {
		return none, nil
	}
	var b strings.Builder
	for _, v := range vars {
		val, err := fe.reader.Read(v, fe.frame)
		fmt.Fprintf(&b, "%s = %s\n", v.Name, s.formatValue(fe, val, err, false))
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// replThread is the thread of a frame id, or the first stopped thread.
func (s *Server) replThread(d *debuggee, frameID int) (*target.Context, int, error) {
	if ref, ok := s.handles.frame(frameID); ok {
		return ref.thread, ref.index, nil
	}
	for _, th := range d.proc.Children() {
		if st, _, _ := th.State(); st != target.StateRunning {
			return th, 0, nil
		}
	}
	return nil, 0, errorf("no thread is stopped")
}

func (s *Server) replBacktrace(d *debuggee, frameID int) (string, error) {
	th, _, err := s.replThread(d, frameID)
	if err != nil {
		return "", err
	}
	tr, _, err := d.trace(th)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i := range tr.Frames {
		f := tr.Frames[i]
		sf := d.stackFrame(th, tr, i)
		fmt.Fprintf(&b, "#%-2d ", i)
		if i > 0 && f.Kind != 2 { // not inline: gdb shows the pc of callers
			fmt.Fprintf(&b, "0x%016x in ", f.PC)
		}
		b.WriteString(sf.Name)
		if sf.Source != nil {
			fmt.Fprintf(&b, " at %s:%d", firstNonEmpty(sf.Source.Path, sf.Source.Name), sf.Line)
		}
		b.WriteByte('\n')
	}
	if tr.Stop == unwind.StopDepthLimit {
		b.WriteString(moreFrames)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func (s *Server) replRegisters(d *debuggee, frameID int, names []string) (string, error) {
	th, index, err := s.replThread(d, frameID)
	if err != nil {
		return "", err
	}
	fe, err := d.env(th, index)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, v := range s.registerVars(fe) {
		if len(names) > 0 && !contains(names, v.Name) && !contains(names, "$"+v.Name) {
			continue
		}
		u, _ := strconv.ParseUint(strings.TrimPrefix(v.Value, "0x"), 16, 64)
		fmt.Fprintf(&b, "%-15s0x%-18x%d\n", v.Name, u, int64(u))
	}
	if b.Len() == 0 {
		return "", errorf("no register %s", strings.Join(names, " "))
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// replExamine is gdb's x/NFU ADDR: N units of size U (b, h, w, g) in
// format F (x, d, u, o, c, s, i is not supported), 8 per line at most.
func (s *Server) replExamine(d *debuggee, frameID int, text string) (string, error) {
	spec, addrText, _ := strings.Cut(strings.TrimPrefix(text, "x"), " ")
	spec = strings.TrimPrefix(spec, "/")
	count, format, size := 1, byte('x'), 4
	i := 0
	for i < len(spec) && spec[i] >= '0' && spec[i] <= '9' {
		i++
	}
	if i > 0 {
		n, err := strconv.Atoi(spec[:i])
		if err != nil || n <= 0 || n > 4096 {
			return "", errorf("x: bad count %q", spec[:i])
		}
		count = n
	}
	for _, c := range spec[i:] {
		switch c {
		case 'b':
			size = 1
		case 'h':
			size = 2
		case 'w':
			size = 4
		case 'g':
			size = 8
		case 'x', 'd', 'u', 'o', 'c', 'a':
			format = byte(c)
		default:
			return "", errorf("x: format letter %q is not supported (x d u o c a; sizes b h w g)", c)
		}
	}
	if format == 'c' && !strings.ContainsAny(spec[i:], "hwg") {
		size = 1
	}
	if format == 'a' {
		size = 8
	}
	addrText = strings.TrimSpace(addrText)
	if addrText == "" {
		return "", errorf("x: give an address")
	}
	fe, _, err := s.evalEnv(d, frameID)
	if err != nil {
		return "", err
	}
	res, err := expr.Eval(addrText, fe.env)
	if err != nil {
		return "", err
	}
	var addr uint64
	if t := res.Type.Strip(); t != nil && t.Kind == 2 /* array */ && res.HasAddress {
		addr = res.Address
	} else {
		n, err := res.Int()
		if err != nil {
			return "", errorf("x: %s is not an address", addrText)
		}
		addr = uint64(n)
	}
	buf := make([]byte, count*size)
	n, _ := d.proc.ReadMemory(addr, buf)
	if n == 0 {
		return "", errorf("Cannot access memory at address 0x%x", addr)
	}
	perLine := 16 / size
	if format == 'c' {
		perLine = 8
	}
	var b strings.Builder
	for k := 0; k*size+size <= n; k++ {
		if k%perLine == 0 {
			if k > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "0x%x:", addr+uint64(k*size))
		}
		var w [8]byte
		copy(w[:], buf[k*size:k*size+size])
		u := binary.LittleEndian.Uint64(w[:])
		b.WriteByte('\t')
		switch format {
		case 'x', 'a':
			fmt.Fprintf(&b, "0x%0*x", size*2, u)
		case 'd':
			shift := uint(64 - 8*size)
			fmt.Fprintf(&b, "%d", int64(u<<shift)>>shift)
		case 'u':
			fmt.Fprintf(&b, "%d", u)
		case 'o':
			fmt.Fprintf(&b, "0%o", u)
		case 'c':
			fmt.Fprintf(&b, "%d %s", int8(u), strconv.QuoteRune(rune(u&0xff)))
		}
	}
	if n < len(buf) {
		fmt.Fprintf(&b, "\nCannot access memory at address 0x%x", addr+uint64(n))
	}
	return b.String(), nil
}

// source: sonde has no sources of its own to give (frames without a file
// carry no source reference).
func (s *Server) source(r *request) (any, error) {
	var a godap.SourceArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	return nil, errorf("no source available for reference %d", a.SourceReference)
}
