package dwarfexpr

// Machine is a reusable evaluator. Its stack and piece buffer are fixed-size
// arrays inside the Machine, so evaluating through one Machine allocates
// nothing; the unwinder keeps one per walk. A Machine is not safe for
// concurrent use.
type Machine struct {
	stack  [StackLimit]Value
	sp     int
	pieces [16]Piece
	extra  []Piece // pieces beyond the fixed buffer (rare: big aggregates)

	target Target
	cfg    *Config
	addr   int // address size in bytes
	mask   uint64
	steps  int
	limit  int
	depth  int
	calls  int

	// Pending location description for the current piece (set by reg*, stack_value, ...).
	loc        Location
	hasLoc     bool
	afterPiece int // offset just past the last piece operator
}

var defaultConfig Config

// Eval evaluates expr against target. Values in push are pushed, in order,
// before the first operator. The Result's Pieces alias the Machine and stay
// valid until the next Eval.
func (m *Machine) Eval(expr []byte, target Target, cfg *Config, push ...uint64) (Result, error) {
	if cfg == nil {
		cfg = &defaultConfig
	}
	m.target, m.cfg = target, cfg
	m.addr = cfg.AddrSize
	if m.addr != 4 {
		m.addr = 8
	}
	m.mask = ^uint64(0)
	if m.addr == 4 {
		m.mask = 0xffffffff
	}
	m.limit = cfg.MaxSteps
	if m.limit <= 0 {
		m.limit = 100000
	}
	m.depth = cfg.MaxDepth
	if m.depth <= 0 || m.depth > StackLimit {
		m.depth = StackLimit
	}
	m.sp, m.steps, m.calls = 0, 0, 0
	m.hasLoc = false
	m.extra = m.extra[:0]
	npieces := 0
	for _, v := range push {
		if m.sp >= m.depth {
			return Result{}, &Error{Offset: 0, Op: 0, Err: ErrStackOverflow}
		}
		m.stack[m.sp] = Value{Bits: v & m.mask}
		m.sp++
	}
	var res Result
	if err := m.run(expr, &npieces); err != nil {
		return Result{}, err
	}
	if npieces > 0 {
		if m.afterPiece != len(expr) {
			return Result{}, &Error{Offset: m.afterPiece, Op: expr[m.afterPiece], Err: ErrBadComposition}
		}
		if npieces <= len(m.pieces) {
			res.Pieces = m.pieces[:npieces]
		} else {
			res.Pieces = m.extra
		}
		return res, nil
	}
	res.Location = m.finish()
	return res, nil
}

// finish turns the machine state at the end of an expression (or at a piece)
// into a location and resets the pending-location state.
func (m *Machine) finish() Location {
	if m.hasLoc {
		m.hasLoc = false
		l := m.loc
		if l.Kind == KindValue && m.sp > 0 {
			m.sp--
		}
		return l
	}
	if m.sp == 0 {
		return Location{Kind: KindEmpty}
	}
	m.sp--
	return Location{Kind: KindMemory, Address: m.stack[m.sp].Bits & m.mask}
}

// Word returns the top of the stack after a successful evaluation of an
// expression that computes a value (CFI's DW_CFA_def_cfa_expression and
// DW_CFA_val_expression use the top entry as a value even without
// DW_OP_stack_value): the Result's address or value.
func (r Result) Word() (uint64, bool) {
	switch r.Kind {
	case KindMemory:
		return r.Address, true
	case KindValue:
		return r.Value.Bits, true
	}
	return 0, false
}
