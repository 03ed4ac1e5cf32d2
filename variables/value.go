package variables

import (
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/sondedbg/sonde/dwarfexpr"
)

// Frame is one stack frame of a stopped thread as value reading needs it.
// Implementations exist for live threads and cores (in the front ends); a
// frame of a backtrace answers with the registers the unwinder recovered.
type Frame interface {
	// ReadMemory fills buf from run-time address addr; a short count means
	// the rest is unreadable.
	ReadMemory(buf []byte, addr uint64) (int, error)
	// Register returns the bytes of DWARF register reg in this frame
	// (little-endian; 16 bytes for xmm registers), or an error when its value
	// is not known here (a caller-saved register in a caller frame).
	Register(reg int) ([]byte, error)
	// PC is the frame's run-time pc: the exact pc for the innermost frame and
	// frames interrupted by a signal, the return address for callers.
	PC() uint64
	// Exact reports whether PC is exact (else code is looked up at PC-1).
	Exact() bool
	// CFA returns the frame's canonical frame address.
	CFA() (uint64, error)
	// Bias is the load bias of the module the frame's code is in.
	Bias() uint64
	// Caller returns the calling (physical) frame and the Reader of its
	// module, or nils when unknown. Entry values are recovered through it.
	Caller() (Frame, *Reader)
}

// TLSFrame is implemented by frames that can locate thread-local storage
// (DW_OP_form_tls_address): TLSAddress returns the run-time address of
// offset in the frame's thread's TLS block of the module whose DWARF r
// reads — the frame's own module or any other of the process, since a
// frame is also where other modules' globals are read (nil r: the frame's
// module).
type TLSFrame interface {
	TLSAddress(r *Reader, offset uint64) (uint64, error)
}

// Writer is implemented by frames whose target can be changed (live
// threads): assignment goes through it.
type Writer interface {
	WriteMemory(addr uint64, data []byte) error
	WriteRegister(reg int, data []byte) error
}

// LookupPC returns the link-time pc to look scopes and locations up at.
func LookupPC(f Frame) uint64 {
	pc := f.PC() - f.Bias()
	if !f.Exact() && pc > 0 {
		pc--
	}
	return pc
}

// Place says where a value is.
type Place uint8

const (
	PlaceOptimizedOut Place = iota // no value at this pc
	PlaceMemory                    // in memory at Address
	PlaceRegister                  // in register Register
	PlaceComputed                  // computed by the location expression, or a constant
	PlacePieces                    // assembled from pieces in several places
	// PlaceImplicitPointer: a pointer whose target has no address (it lives
	// in registers); Target and TargetOffset say what it points to, so
	// dereferencing works though the pointer has no value.
	PlaceImplicitPointer
)

// Value is a variable's (or an expression's) value in a frame.
type Value struct {
	Type     *Type
	Place    Place
	Address  uint64 // PlaceMemory: run-time address
	Register int    // PlaceRegister: DWARF register number
	// Bytes are the value's bytes, little-endian, ByteSize of Type long;
	// nil when the value is optimized out or too large to load.
	Bytes []byte
	// Unavailable, when not nil, marks the bytes of a value assembled from
	// pieces that have no location (Bytes holds zeros there): gdb shows
	// those parts as <optimized out>.
	Unavailable []bool
	// MissingBits are the same parts as bit ranges [from, to) (a byte
	// may be partly known: bit fields).
	MissingBits [][2]uint64
	// BitOffset/BitSize, when BitSize is non-zero, place a bit field within
	// the bytes at Address.
	BitOffset, BitSize int64
	// Target is the DIE of the variable an implicit pointer points into and
	// TargetOffset the byte offset in it (PlaceImplicitPointer).
	Target       uint64
	TargetOffset int64
}

// MaxValueSize bounds the bytes one value may load (a huge array is located
// but not loaded; index it instead).
const MaxValueSize = 1 << 20

// Locate evaluates v's location in f without loading its bytes.
func (r *Reader) Locate(v *Variable, f Frame) (Value, error) {
	if v.r != nil && v.r != r {
		return v.r.Locate(v, f)
	}
	val := Value{Type: v.Type}
	pc := LookupPC(f)
	if v.Loc.Kind == LocConst {
		val.Place, val.Bytes = PlaceComputed, constBytes(v.Loc.Const, v.Type)
		return val, nil
	}
	if v.Loc.Err != nil && v.Loc.Kind == LocList && len(v.Loc.List) == 0 {
		return val, v.Loc.Err
	}
	expr, ok := v.Loc.At(pc)
	if !ok {
		return val, &Error{Op: "locate " + v.Name, Offset: uint64(v.Offset), Err: ErrOptimizedOut}
	}
	res, err := r.evalLocation(expr, v.unit, v.Scope, f)
	if err != nil {
		return val, &Error{Op: "locate " + v.Name, Offset: uint64(v.Offset), Err: err}
	}
	return r.place(val, res, f)
}

// Read locates v in f and loads its value. Variable-length array types are
// resolved to their length in this frame.
func (r *Reader) Read(v *Variable, f Frame) (Value, error) {
	if v.r != nil && v.r != r {
		return v.r.Read(v, f)
	}
	val, err := r.Locate(v, f)
	if err != nil {
		return val, err
	}
	if t, err := r.ResolveType(val.Type, v.Scope, f); err == nil {
		val.Type = t
	}
	if val.Bytes == nil && val.Place != PlaceImplicitPointer {
		err = r.Load(&val, f)
	}
	return val, err
}

// evaluation is a location expression's result, copied out of the machine.
type evaluation struct {
	dwarfexpr.Location
	pieces []dwarfexpr.Piece
}

// place turns an evaluation into a Value (loading computed values at once).
func (r *Reader) place(val Value, res evaluation, f Frame) (Value, error) {
	if len(res.pieces) > 0 {
		val.Place = PlacePieces
		b, unavail, gaps, err := r.assemble(res.pieces, f, val.Type.ByteSize())
		val.Bytes, val.Unavailable, val.MissingBits = b, unavail, gaps
		return val, err
	}
	size := val.Type.ByteSize()
	switch res.Kind {
	case dwarfexpr.KindEmpty:
		return val, ErrOptimizedOut
	case dwarfexpr.KindMemory:
		val.Place, val.Address = PlaceMemory, res.Address
	case dwarfexpr.KindRegister:
		val.Place, val.Register = PlaceRegister, int(res.Register)
	case dwarfexpr.KindValue:
		if size > 8 {
			return val, bad("place value", 0, "an 8-byte stack value cannot hold a %d-byte %s", size, val.Type)
		}
		val.Place = PlaceComputed
		val.Bytes = valueBytes(res.Value, size)
	case dwarfexpr.KindImplicit:
		if size > int64(len(res.Bytes)) {
			return val, bad("place value", 0, "%d implicit bytes for a %d-byte %s", len(res.Bytes), size, val.Type)
		}
		val.Place = PlaceComputed
		val.Bytes = fit(res.Bytes, size)
	case dwarfexpr.KindImplicitPointer:
		val.Place = PlaceImplicitPointer
		val.Target, val.TargetOffset = r.pub(dwarf.Offset(res.PointerDIE)), res.PointerOffset
	}
	return val, nil
}

func valueBytes(v dwarfexpr.Value, size int64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v.Bits)
	if size <= 0 || size > 8 {
		size = 8
		if v.Type.Size > 0 && v.Type.Size <= 8 {
			size = int64(v.Type.Size)
		}
	}
	return append([]byte(nil), b[:size]...)
}

func fit(b []byte, size int64) []byte {
	if size < 0 || int64(len(b)) == size {
		return append([]byte(nil), b...)
	}
	out := make([]byte, size)
	copy(out, b)
	return out
}

// Load fills v.Bytes from where v is (memory or register).
func (r *Reader) Load(v *Value, f Frame) error {
	size := v.Type.ByteSize()
	if size < 0 {
		return fmt.Errorf("variables: size of %s is unknown", v.Type)
	}
	if size > MaxValueSize {
		return fmt.Errorf("variables: %s is %d bytes: %w", v.Type, size, ErrTooLarge)
	}
	switch v.Place {
	case PlaceMemory:
		buf := make([]byte, size)
		n, err := f.ReadMemory(buf, v.Address)
		if n < len(buf) {
			return &MemoryError{Addr: v.Address + uint64(n), Size: len(buf) - n, Err: err}
		}
		v.Bytes = buf
	case PlaceRegister:
		b, err := f.Register(v.Register)
		if err != nil {
			return fmt.Errorf("%w: DWARF register %d: %v", ErrRegister, v.Register, err)
		}
		if int64(len(b)) < size {
			// A value wider than its register (gcc does this for long
			// double in x87 registers): not readable from one register.
			return fmt.Errorf("%w: %d-byte value in %d-byte register %d", ErrRegister, size, len(b), v.Register)
		}
		v.Bytes = append([]byte(nil), b[:size]...)
	case PlaceOptimizedOut:
		return ErrOptimizedOut
	}
	return nil
}

// MemoryError reports unreadable target memory.
type MemoryError struct {
	Addr uint64
	Size int
	Err  error
}

func (e *MemoryError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("cannot read %d bytes at %#x: %v", e.Size, e.Addr, e.Err)
	}
	return fmt.Sprintf("cannot read %d bytes at %#x", e.Size, e.Addr)
}
func (e *MemoryError) Is(t error) bool { return t == ErrMemory }
func (e *MemoryError) Unwrap() error   { return e.Err }

// assemble builds a value from pieces. Bytes of pieces without a location
// are marked unavailable (never made up); when every byte is, the value is
// optimized out.
func (r *Reader) assemble(pieces []dwarfexpr.Piece, f Frame, size int64) ([]byte, []bool, [][2]uint64, error) {
	var total uint64
	for _, p := range pieces {
		total += p.SizeBits
	}
	if total > MaxValueSize*8 {
		return nil, nil, nil, ErrTooLarge
	}
	nbytes := (total + 7) / 8
	if size > 0 && uint64(size) > nbytes {
		nbytes = uint64(size)
	}
	out := make([]byte, nbytes)
	var unavail []bool
	var gaps [][2]uint64
	missing := func(from, n uint64) {
		gaps = append(gaps, [2]uint64{from, from + n})
		if unavail == nil {
			unavail = make([]bool, nbytes)
		}
		for b := from / 8; b < (from+n+7)/8 && b < nbytes; b++ {
			unavail[b] = true
		}
	}
	if total < nbytes*8 {
		missing(total, nbytes*8-total)
	}
	var at uint64
	for _, p := range pieces {
		var src []byte
		switch p.Kind {
		case dwarfexpr.KindEmpty:
			missing(at, p.SizeBits)
		case dwarfexpr.KindMemory:
			src = make([]byte, (p.SizeBits+p.OffsetBits+7)/8)
			if n, err := f.ReadMemory(src, p.Address); n < len(src) {
				return nil, nil, nil, &MemoryError{Addr: p.Address, Size: len(src), Err: err}
			}
		case dwarfexpr.KindRegister:
			b, err := f.Register(int(p.Register))
			if err != nil {
				missing(at, p.SizeBits)
			}
			src = b
		case dwarfexpr.KindValue:
			src = valueBytes(p.Value, 8)
		case dwarfexpr.KindImplicit:
			src = p.Bytes
		default:
			missing(at, p.SizeBits)
		}
		if src != nil {
			copyBits(out, at, src, p.OffsetBits, p.SizeBits)
		}
		at += p.SizeBits
	}
	if size >= 0 && int64(len(out)) > size {
		out = out[:size]
		if unavail != nil {
			unavail = unavail[:size]
		}
	}
	all := len(out) > 0
	for i := range out {
		all = all && unavail != nil && unavail[i]
	}
	if all {
		return nil, nil, nil, fmt.Errorf("%w: no piece of the value has a location", ErrOptimizedOut)
	}
	return out, unavail, gaps, nil
}

// Available reports whether bytes [off, off+n) of v are known.
func (v *Value) Available(off, n int64) bool {
	if v.Bytes == nil {
		return false
	}
	for i := off; i < off+n && v.Unavailable != nil; i++ {
		if i >= 0 && i < int64(len(v.Unavailable)) && v.Unavailable[i] {
			return false
		}
	}
	return true
}

// copyBits copies n bits from src at bit srcOff to dst at bit dstOff
// (little-endian bit order); bits beyond src read as zero.
func copyBits(dst []byte, dstOff uint64, src []byte, srcOff, n uint64) {
	if dstOff%8 == 0 && srcOff%8 == 0 && n%8 == 0 {
		d, s := dst[min(dstOff/8, uint64(len(dst))):], src[min(srcOff/8, uint64(len(src))):]
		copy(d[:min(uint64(len(d)), n/8)], s)
		return
	}
	for i := uint64(0); i < n; i++ {
		si, di := srcOff+i, dstOff+i
		if di/8 >= uint64(len(dst)) {
			return
		}
		var bit byte
		if si/8 < uint64(len(src)) {
			bit = (src[si/8] >> (si % 8)) & 1
		}
		dst[di/8] = dst[di/8]&^(1<<(di%8)) | bit<<(di%8)
	}
}

// exprTarget adapts a Frame to the expression evaluator.
type exprTarget struct{ f Frame }

func (t exprTarget) ReadMemory(buf []byte, addr uint64) (int, error) {
	return t.f.ReadMemory(buf, addr)
}
func (t exprTarget) Register(reg uint64) (uint64, error) {
	if reg > 1<<16 {
		return 0, dwarfexpr.ErrUnknownRegister
	}
	b, err := t.f.Register(int(reg))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", dwarfexpr.ErrUnknownRegister, err)
	}
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:]), nil
}

// evalLocation runs a location expression of a DIE in unit, in scope s (for
// the frame base) and frame f.
func (r *Reader) evalLocation(expr []byte, unit int, s *Scope, f Frame) (evaluation, error) {
	return r.evalDepth(expr, unit, s, f, 0)
}

func (r *Reader) evalDepth(expr []byte, unit int, s *Scope, f Frame, depth int) (evaluation, error) {
	cfg := r.config(unit, s, f, depth)
	m := machines.Get().(*dwarfexpr.Machine)
	defer machines.Put(m)
	res, err := m.Eval(expr, exprTarget{f}, cfg)
	if err != nil {
		if errors.Is(err, dwarfexpr.ErrMemory) {
			err = errors.Join(ErrMemory, err)
		}
		return evaluation{}, err
	}
	ev := evaluation{Location: res.Location}
	if len(res.Pieces) > 0 {
		ev.pieces = append([]dwarfexpr.Piece(nil), res.Pieces...)
	}
	return ev, nil
}

// machines are expression evaluators to reuse: a Machine is a few KiB (its
// stack and pieces), and every variable read evaluates one or two (its
// location, its function's frame base), which allocated and cleared that
// much each time. Pieces are copied out before one goes back.
var machines = sync.Pool{New: func() any { return new(dwarfexpr.Machine) }}

// maxEntryDepth bounds nested evaluations through entry values: each
// DW_OP_entry_value is evaluated in the caller's frame, where the call
// site's value may be an entry value again (a recursion passing n-1 down),
// so the bound is a number of frames: gdb's, 256 (see EntryLoopError).
const maxEntryDepth = 256

// config prepares the evaluator's callbacks for one evaluation.
func (r *Reader) config(unit int, s *Scope, f Frame, depth int) *dwarfexpr.Config {
	cfg := &dwarfexpr.Config{AddrSize: 8, AddrBias: f.Bias(), MaxSteps: 10000}
	cfg.CFA = f.CFA
	if tf, ok := f.(TLSFrame); ok {
		module := r.root()
		cfg.TLSAddress = func(off uint64) (uint64, error) { return tf.TLSAddress(module, off) }
	}
	cfg.FrameBase = func() (uint64, error) {
		if s == nil {
			return 0, errors.New("no enclosing function for DW_OP_fbreg")
		}
		fn := s.Function()
		if fn.frameBase == nil {
			return 0, errors.New("function has no DW_AT_frame_base")
		}
		expr, ok := fn.frameBase.At(LookupPC(f))
		if !ok || depth > 2 {
			return 0, errors.New("no frame base at this pc")
		}
		ev, err := r.evalDepth(expr, fn.unit, nil, f, depth+1)
		if err != nil {
			return 0, err
		}
		switch ev.Kind {
		case dwarfexpr.KindMemory:
			return ev.Address, nil
		case dwarfexpr.KindRegister:
			// DW_OP_bregN-less frame bases (DW_OP_reg6): the register's value.
			return exprTarget{f}.Register(ev.Register)
		case dwarfexpr.KindValue:
			return ev.Value.Bits, nil
		}
		return 0, errors.New("frame base is not an address")
	}
	cfg.DebugConst = func(idx uint64) (uint64, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if unit < 0 || unit >= len(r.units) {
			return 0, errors.New("no unit for DW_OP_constx")
		}
		return r.addrx(r.unitDIE(unit), idx)
	}
	cfg.DebugAddr = func(idx uint64) (uint64, error) {
		a, err := cfg.DebugConst(idx)
		return a + f.Bias(), err
	}
	cfg.BaseType = func(cuOff uint64) (dwarfexpr.BaseType, error) {
		if unit < 0 || unit >= len(r.units) {
			return dwarfexpr.BaseType{}, errors.New("no unit for a typed operator")
		}
		off := r.units[unit].off + cuOff
		t, err := r.Type(off | r.tag)
		if err != nil {
			return dwarfexpr.BaseType{}, err
		}
		if t.Kind != KindBase || t.Size <= 0 || t.Size > 8 {
			return dwarfexpr.BaseType{}, fmt.Errorf("DIE %#x is not a base type of at most 8 bytes", off)
		}
		return dwarfexpr.BaseType{Offset: off, Size: uint8(t.Size), Encoding: uint8(t.Encoding)}, nil
	}
	cfg.EntryValue = func(expr []byte) (dwarfexpr.Value, error) {
		return r.entryValue(expr, s, f, depth)
	}
	cfg.ParameterRef = func(off uint64) (uint64, error) {
		return r.parameterRef(off, unit, s, f, depth)
	}
	return cfg
}
