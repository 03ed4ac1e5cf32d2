// Package ccond compiles a debugger's C breakpoint condition into a fast
// probe's condition (probes.Expr), so that it is evaluated in the target
// and a false condition costs nanoseconds instead of a stop.
//
// What compiles: comparisons (== != < <= > >=) of a variable — a local, a
// parameter or a global of integer, enum, bool, char or pointer type —
// with an integer constant (a literal, a character, an enumerator, possibly
// negated), a variable alone (non-zero) or negated with !, joined by && and
// || (and parentheses). The variable's DWARF location at the probed pc must
// be a register, memory at a fixed offset from a register or from the
// frame base/CFA (the CFI row at the pc says which register the CFA is
// relative to), or a static address. C's usual arithmetic conversions are
// applied as the compiler would. Anything else (calls, $printf, members,
// dereferences, floats, entry values, location lists without an entry at
// the pc, thread-local variables) is an error naming why: the caller falls
// back to stopping and evaluating the condition in the debugger.
//
// A location is classified by evaluating it twice in a frame whose
// registers and CFA are distinct tags and whose memory cannot be read: an
// address that moves with one tag is that register (or the CFA) plus an
// offset, one that moves with none is static.
package ccond

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/translate/probes"
	"github.com/sondedbg/sonde/unwind/cfi"
	"github.com/sondedbg/sonde/variables"
)

// Site is where a condition is compiled: the probed instruction's run-time
// pc in its module (Bias, Binary and its DWARF Reader), and how names found
// nowhere in the module resolve (globals of other modules; may be nil).
type Site struct {
	PC     uint64
	Bias   uint64
	Binary *symbols.Binary
	Reader *variables.Reader
	Global func(name string) (*variables.Variable, *variables.Reader, uint64, error)
}

// ErrNotCompilable wraps every reason a condition cannot run in a probe.
var ErrNotCompilable = errors.New("condition cannot be compiled into a probe")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotCompilable, fmt.Sprintf(format, args...))
}

// parseAt parses text in the scope of site's pc, and makes the compiler of
// what it parsed.
func parseAt(text string, site Site) (*compiler, expr.Node, error) {
	if site.Reader == nil {
		return nil, nil, refuse("no debug information at %#x", site.PC)
	}
	chain, err := site.Reader.ScopesAt(site.PC - site.Bias)
	if err != nil {
		return nil, nil, refuse("no scope at %#x: %v", site.PC, err)
	}
	c := &compiler{site: site, env: &expr.Env{Reader: site.Reader, Scopes: variables.FrameScopes(chain, 0)}}
	n, err := expr.Parse(text, c.env.IsType)
	if err != nil {
		return nil, nil, err
	}
	return c, n, nil
}

// Compile compiles the C condition text at site.
func Compile(text string, site Site) (*probes.Expr, error) {
	c, n, err := parseAt(text, site)
	if err != nil {
		return nil, err
	}
	x, err := c.cond(n, 0)
	if err != nil {
		return nil, err
	}
	return x, x.Check()
}

type compiler struct {
	site Site
	env  *expr.Env
	cfa  *cfaRule
}

// cType is an integer type as C's conversions see it.
type cType struct {
	size   int
	signed bool
}

// operand is a variable: where it is and its type.
type operand struct {
	v probes.Value
	t cType
}

// constant is an integer constant, its 64-bit value extended as its type is.
type constant struct {
	val int64
	t   cType
}

const maxDepth = 64

// cond compiles n as a truth value.
func (c *compiler) cond(n expr.Node, depth int) (*probes.Expr, error) {
	if depth > maxDepth {
		return nil, refuse("the condition nests too deep")
	}
	switch n := n.(type) {
	case *expr.Binary:
		switch n.Op {
		case "&&", "||":
			l, err := c.cond(n.X, depth+1)
			if err != nil {
				return nil, err
			}
			r, err := c.cond(n.Y, depth+1)
			if err != nil {
				return nil, err
			}
			return &probes.Expr{Op: n.Op, L: l, R: r}, nil
		case "==", "!=", "<", "<=", ">", ">=":
			return c.compare(n, depth)
		}
		return nil, refuse("operator %s", n.Op)
	case *expr.Unary:
		if n.Op != "!" {
			break
		}
		x, err := c.cond(n.X, depth+1)
		if err != nil {
			return nil, err
		}
		return negate(x), nil
	case *expr.Ident:
		op, err := c.operand(n)
		if err != nil {
			return nil, err
		}
		return c.cmp(op, "!=", constant{0, cType{4, true}})
	}
	return nil, refuse("%s is not a comparison of a variable with a constant", describe(n))
}

// negate returns !x (De Morgan through && and ||).
func negate(x *probes.Expr) *probes.Expr {
	if x.Cmp != nil {
		c := *x.Cmp
		c.Op = map[string]string{"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}[c.Op]
		return &probes.Expr{Cmp: &c}
	}
	op := "||"
	if x.Op == "||" {
		op = "&&"
	}
	return &probes.Expr{Op: op, L: negate(x.L), R: negate(x.R)}
}

var mirrored = map[string]string{"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}

func (c *compiler) compare(n *expr.Binary, depth int) (*probes.Expr, error) {
	if k, err := c.constant(n.Y, depth); err == nil {
		op, err := c.operand(n.X)
		if err != nil {
			return nil, err
		}
		return c.cmp(op, n.Op, k)
	}
	if k, err := c.constant(n.X, depth); err == nil {
		op, err := c.operand(n.Y)
		if err != nil {
			return nil, err
		}
		return c.cmp(op, mirrored[n.Op], k)
	}
	return nil, refuse("%s compares no constant", describe(n))
}

// cmp builds op OP k with C's conversions.
func (c *compiler) cmp(op operand, rel string, k constant) (*probes.Expr, error) {
	ot := op.t
	if ot.size < 4 {
		ot = cType{4, true} // promoted to int (its value fits, as loaded)
	}
	var common cType
	switch {
	case ot.signed == k.t.signed:
		common = cType{max(ot.size, k.t.size), ot.signed}
	default:
		u, s := ot, k.t
		if !k.t.signed {
			u, s = k.t, ot
		}
		if u.size >= s.size {
			common = u
		} else {
			common = s
		}
	}
	v := op.v
	val := k.val
	if common.size == 4 && !common.signed {
		// Both become unsigned int: 32 bits, zero-extended.
		if op.t.size < 4 && op.t.signed {
			return nil, refuse("a signed %d-byte value compared as unsigned int", op.t.size)
		}
		v.Signed = false
		val = int64(uint32(val))
	}
	return &probes.Expr{Cmp: &probes.Compare{Value: v, Op: rel, Const: val, Unsigned: !common.signed}}, nil
}

// constant evaluates an integer constant expression: a literal, a
// character, an enumerator, negated or not.
func (c *compiler) constant(n expr.Node, depth int) (constant, error) {
	if depth > maxDepth {
		return constant{}, refuse("too deep")
	}
	switch n := n.(type) {
	case *expr.IntLit:
		return literal(n), nil
	case *expr.Unary:
		if n.Op != "-" && n.Op != "+" {
			break
		}
		k, err := c.constant(n.X, depth+1)
		if err != nil {
			return k, err
		}
		if n.Op == "-" {
			k.val = -k.val
			if k.t.size == 4 {
				if k.t.signed {
					k.val = int64(int32(k.val))
				} else {
					k.val = int64(uint32(k.val))
				}
			}
		}
		return k, nil
	case *expr.Ident:
		if t, val, err := c.site.Reader.Enumerator(n.Name); err == nil && !c.isVariable(n.Name) {
			ct := cType{4, true}
			if s := t.ByteSize(); s == 8 {
				ct.size = 8
			}
			return constant{val, ct}, nil
		}
	}
	return constant{}, refuse("%s is no integer constant", describe(n))
}

// literal types an integer constant as C does.
func literal(n *expr.IntLit) constant {
	if n.Char {
		return constant{int64(int32(n.Value)), cType{4, true}}
	}
	u, l := false, false
	for _, r := range n.Suffix {
		switch r {
		case 'u', 'U':
			u = true
		case 'l', 'L':
			l = true
		}
	}
	v := n.Value
	fits := func(t cType) bool {
		switch t {
		case cType{4, true}:
			return v <= 1<<31-1
		case cType{4, false}:
			return v <= 1<<32-1
		case cType{8, true}:
			return v <= 1<<63-1
		}
		return true
	}
	var order []cType
	switch {
	case u && l:
		order = []cType{{8, false}}
	case u:
		order = []cType{{4, false}, {8, false}}
	case l && n.Decimal:
		order = []cType{{8, true}, {8, false}}
	case l:
		order = []cType{{8, true}, {8, false}}
	case n.Decimal:
		order = []cType{{4, true}, {8, true}, {8, false}}
	default:
		order = []cType{{4, true}, {4, false}, {8, true}, {8, false}}
	}
	for _, t := range order {
		if fits(t) {
			return constant{int64(v), t}
		}
	}
	return constant{int64(v), cType{8, false}}
}

// isVariable reports whether name is a local or parameter in scope (which
// hides an enumerator of the same name).
func (c *compiler) isVariable(name string) bool {
	for _, s := range c.env.Scopes {
		for _, v := range s.Vars {
			if v.Name == name {
				return true
			}
		}
	}
	return false
}

// operand locates a variable at the site.
func (c *compiler) operand(n expr.Node) (operand, error) {
	id, ok := n.(*expr.Ident)
	if !ok {
		return operand{}, refuse("%s is not a variable", describe(n))
	}
	v, r, bias, err := c.lookup(id.Name)
	if err != nil {
		return operand{}, err
	}
	t := v.Type.Strip()
	if t == nil {
		return operand{}, refuse("%s has no type", id.Name)
	}
	var ct cType
	switch {
	case t.Kind == variables.KindPointer:
		ct = cType{8, false}
	case t.Kind == variables.KindEnum || t.Kind == variables.KindBase && t.Encoding != variables.EncFloat && t.Encoding != variables.EncComplexFloat:
		ct = cType{int(t.ByteSize()), t.IsSigned()}
	default:
		return operand{}, refuse("%s is a %s, not an integer", id.Name, t.Kind)
	}
	switch ct.size {
	case 1, 2, 4, 8:
	default:
		return operand{}, refuse("%s is %d bytes long", id.Name, ct.size)
	}
	val, err := c.locate(v, r, bias)
	if err != nil {
		return operand{}, refuse("%s: %v", id.Name, err)
	}
	val.Size, val.Signed = ct.size, ct.signed
	return operand{val, ct}, nil
}

// lookup finds a variable as the expression evaluator does: scopes
// innermost first, then the module's globals, then other modules'.
func (c *compiler) lookup(name string) (*variables.Variable, *variables.Reader, uint64, error) {
	for _, s := range c.env.Scopes {
		for i := len(s.Vars) - 1; i >= 0; i-- {
			if v := s.Vars[i]; v.Name == name {
				return v, c.site.Reader, c.site.Bias, nil
			}
		}
		for _, v := range s.Vars {
			if v.Name == "this" {
				return nil, nil, 0, refuse("%s may be a member of this", name)
			}
		}
	}
	if vs, err := c.site.Reader.Globals(name); err == nil && vs[0].Loc.Kind != variables.LocNone {
		return vs[0], c.site.Reader, c.site.Bias, nil
	}
	if c.site.Global != nil {
		if v, r, bias, err := c.site.Global(name); err == nil && v != nil {
			return v, r, bias, nil
		}
	}
	return nil, nil, 0, refuse("no variable %q at %#x", name, c.site.PC)
}

// Tags: register k reads as tagBase(set) + (k+1)<<36, the CFA as
// tagBase(set) + cfaTag<<36; offsets stay far below 1<<36.
const (
	tagShift = 36
	cfaTag   = 100
	maxOff   = 1 << 32
)

// tagBase keeps tags in the upper half, where no user address is.
func tagBase(set int) uint64 { return 1<<63 | uint64(2*set+1)<<44 }

func regTag(set, reg int) uint64 { return tagBase(set) + uint64(reg+1)<<tagShift }

// tagFrame is a frame of tags: no memory, registers and CFA as tags.
type tagFrame struct {
	set      int
	pc, bias uint64
}

func (f tagFrame) ReadMemory([]byte, uint64) (int, error) {
	return 0, errors.New("the location reads memory")
}
func (f tagFrame) Register(reg int) ([]byte, error) {
	if reg < 0 || reg > 16 {
		return nil, fmt.Errorf("the location uses DWARF register %d", reg)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], regTag(f.set, reg))
	return b[:], nil
}
func (f tagFrame) PC() uint64                                   { return f.pc }
func (f tagFrame) Exact() bool                                  { return true }
func (f tagFrame) CFA() (uint64, error)                         { return tagBase(f.set) + cfaTag<<tagShift, nil }
func (f tagFrame) Bias() uint64                                 { return f.bias }
func (f tagFrame) Caller() (variables.Frame, *variables.Reader) { return nil, nil }

// dwarfRegs are the x86-64 DWARF register numbers 0-16 by name.
var dwarfRegs = []string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"}

// locate classifies v's location at the site.
func (c *compiler) locate(v *variables.Variable, r *variables.Reader, bias uint64) (probes.Value, error) {
	var vals [2]variables.Value
	for set := range vals {
		val, err := r.Locate(v, tagFrame{set: set, pc: c.site.PC, bias: bias})
		if err != nil {
			return probes.Value{}, err
		}
		vals[set] = val
	}
	a, b := vals[0], vals[1]
	if a.Place != b.Place {
		return probes.Value{}, errors.New("the location is not fixed")
	}
	switch a.Place {
	case variables.PlaceRegister:
		if a.Register != b.Register || a.Register < 0 || a.Register > 15 {
			return probes.Value{}, fmt.Errorf("in DWARF register %d", a.Register)
		}
		return probes.Value{Reg: dwarfRegs[a.Register]}, nil
	case variables.PlaceMemory:
	default:
		return probes.Value{}, errors.New("not in a register or in memory at the pc (computed, pieces or optimized out)")
	}
	if a.BitSize != 0 {
		return probes.Value{}, errors.New("a bit field")
	}
	if a.Address == b.Address {
		if a.Address >= 1<<62 {
			return probes.Value{}, errors.New("the location's address is not static")
		}
		return probes.Value{Addr: a.Address}, nil
	}
	// Relative to which tag?
	for reg := 0; reg <= 16; reg++ {
		if off, ok := sameOffset(a.Address, b.Address, regTag(0, reg), regTag(1, reg)); ok {
			if reg == 16 {
				return probes.Value{}, errors.New("relative to rip")
			}
			return probes.Value{Base: dwarfRegs[reg], Off: off}, nil
		}
	}
	if off, ok := sameOffset(a.Address, b.Address, tagBase(0)+cfaTag<<tagShift, tagBase(1)+cfaTag<<tagShift); ok {
		rule, err := c.cfaRule()
		if err != nil {
			return probes.Value{}, err
		}
		return probes.Value{Base: rule.reg, Off: rule.off + off}, nil
	}
	return probes.Value{}, errors.New("the address is no register or CFA plus an offset")
}

func sameOffset(a, b, ta, tb uint64) (int64, bool) {
	da, db := int64(a-ta), int64(b-tb)
	return da, da == db && da > -maxOff && da < maxOff
}

// cfaRule is the CFA at the site: register plus offset.
type cfaRule struct {
	reg string
	off int64
}

var cfiTables sync.Map // *symbols.Binary -> *cfiEntry

type cfiEntry struct {
	once      sync.Once
	eh, debug *cfi.Table
	loadErr   error
}

func (c *compiler) cfaRule() (cfaRule, error) {
	if c.cfa != nil {
		return *c.cfa, nil
	}
	if c.site.Binary == nil {
		return cfaRule{}, errors.New("no call frame information")
	}
	v, _ := cfiTables.LoadOrStore(c.site.Binary, &cfiEntry{})
	e := v.(*cfiEntry)
	e.once.Do(func() {
		u, err := c.site.Binary.UnwindSections()
		e.loadErr = err
		if len(u.EhFrame.Data) > 0 {
			e.eh = cfi.NewEHFrame(u.EhFrame.Data, cfi.Options{Addr: u.EhFrame.Addr, Hdr: u.EhFrameHdr.Data, HdrAddr: u.EhFrameHdr.Addr})
		}
		if len(u.DebugFrame.Data) > 0 {
			e.debug = cfi.NewDebugFrame(u.DebugFrame.Data, cfi.Options{Addr: u.DebugFrame.Addr})
		}
	})
	var row cfi.Row
	err := errors.New("no call frame information")
	if e.loadErr != nil {
		err = e.loadErr
	}
	for _, t := range []*cfi.Table{e.eh, e.debug} {
		if t == nil {
			continue
		}
		if err = t.RowFor(c.site.PC-c.site.Bias, &row); err == nil {
			break
		}
	}
	if err != nil {
		return cfaRule{}, fmt.Errorf("the frame base is the CFA, and the CFI at %#x says: %v", c.site.PC, err)
	}
	if row.CFA.Kind != cfi.RuleCFARegOffset || int(row.CFA.Reg) > 15 {
		return cfaRule{}, fmt.Errorf("the CFA at %#x is %s", c.site.PC, row.CFA)
	}
	c.cfa = &cfaRule{reg: dwarfRegs[row.CFA.Reg], off: row.CFA.Offset}
	return *c.cfa, nil
}

func describe(n expr.Node) string {
	switch n := n.(type) {
	case *expr.Call:
		return "a call"
	case *expr.Register:
		return "$" + n.Name
	case *expr.Ident:
		return n.Name
	case *expr.Binary:
		return "operator " + n.Op
	case *expr.Unary:
		return "operator " + n.Op
	case *expr.Member:
		return "a member"
	case *expr.Index:
		return "an index"
	case *expr.Cast:
		return "a cast"
	case *expr.FloatLit:
		return "a floating constant"
	case *expr.StringLit:
		return "a string"
	}
	return fmt.Sprintf("%T", n)
}
