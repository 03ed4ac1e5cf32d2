package probes

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Compiled conditions: what a debugger's breakpoint condition becomes when
// it can run in a probe's payload. Comparisons of a value the payload can
// read without help (a register, memory at a register plus an offset — a
// local in the frame — or at a static address) with a constant, joined by
// && and ||, evaluated with C's short circuit. The payload loads each value
// into rax extended as its C type is (sign or zero), compares it with the
// constant as 64-bit signed or unsigned numbers, and jumps.

// Value is where one operand is at the probed instruction.
type Value struct {
	// Reg is the register that holds the value ("rdi", "rax", "r12"), or
	// "" for a value in memory.
	Reg string
	// Base, for a value in memory: the register the address is relative
	// to (Off bytes from it); "" for the static address Addr.
	Base string
	Off  int64
	Addr uint64
	// FS: the value is in the thread's TLS block, at %fs:Off (Reg and
	// Base empty).
	FS bool
	// Size is the value's size in bytes (1, 2, 4 or 8); Signed says how it
	// is extended to 64 bits.
	Size   int
	Signed bool
}

func (v Value) String() string {
	sz := fmt.Sprintf("%c%d", map[bool]byte{true: 's', false: 'u'}[v.Signed], 8*v.Size)
	switch {
	case v.Reg != "":
		return fmt.Sprintf("%s:%s", v.Reg, sz)
	case v.Base != "":
		return fmt.Sprintf("[%s%+d]:%s", v.Base, v.Off, sz)
	case v.FS:
		return fmt.Sprintf("[fs:%#x]:%s", v.Off, sz)
	}
	return fmt.Sprintf("[%#x]:%s", v.Addr, sz)
}

// Expr is a compiled condition: a comparison (Cmp set) or Op ("&&", "||")
// of L and R.
type Expr struct {
	Op   string
	L, R *Expr
	Cmp  *Compare
}

// Compare is Value Op Const, the two compared as 64-bit numbers (Unsigned:
// unsigned ones).
type Compare struct {
	Value    Value
	Op       string // == != < <= > >=
	Const    int64
	Unsigned bool
}

func (x *Expr) String() string {
	if x == nil {
		return "<nil>"
	}
	if x.Cmp != nil {
		c := x.Cmp
		if c.Unsigned {
			return fmt.Sprintf("%s %s %#x", c.Value, c.Op, uint64(c.Const))
		}
		return fmt.Sprintf("%s %s %d", c.Value, c.Op, c.Const)
	}
	return fmt.Sprintf("(%s %s %s)", x.L, x.Op, x.R)
}

// maxExprDepth bounds a condition's nesting (and so the payload's size).
const maxExprDepth = 32

// maxCompares bounds the comparisons of one condition.
const maxCompares = 16

// Check validates a compiled condition.
func (x *Expr) Check() error {
	n := 0
	var walk func(x *Expr, depth int) error
	walk = func(x *Expr, depth int) error {
		if x == nil {
			return errors.New("condition: empty operand")
		}
		if depth > maxExprDepth {
			return fmt.Errorf("condition nests deeper than %d", maxExprDepth)
		}
		if x.Cmp == nil {
			if x.Op != "&&" && x.Op != "||" {
				return fmt.Errorf("condition: unknown operator %q", x.Op)
			}
			if err := walk(x.L, depth+1); err != nil {
				return err
			}
			return walk(x.R, depth+1)
		}
		if n++; n > maxCompares {
			return fmt.Errorf("condition has more than %d comparisons", maxCompares)
		}
		c := x.Cmp
		if _, ok := jccSigned[c.Op]; !ok {
			return fmt.Errorf("condition %s: unknown comparison %q", x, c.Op)
		}
		v := c.Value
		switch v.Size {
		case 1, 2, 4, 8:
		default:
			return fmt.Errorf("condition %s: a %d-byte value cannot be compared", x, v.Size)
		}
		for _, r := range []string{v.Reg, v.Base} {
			if r == "" || r == "rsp" {
				continue
			}
			if _, ok := regNumbers[r]; !ok {
				return fmt.Errorf("condition %s: no register %q", x, r)
			}
		}
		if v.Reg != "" && v.Reg == "rsp" {
			return fmt.Errorf("condition %s: rsp itself is not compared", x)
		}
		return nil
	}
	return walk(x, 0)
}

// Second opcode bytes of jcc rel32 (0x0f first) for each comparison.
var (
	jccSigned   = map[string]byte{"==": 0x84, "!=": 0x85, "<": 0x8c, "<=": 0x8e, ">": 0x8f, ">=": 0x8d}
	jccUnsigned = map[string]byte{"==": 0x84, "!=": 0x85, "<": 0x82, "<=": 0x86, ">": 0x87, ">=": 0x83}
	negated     = map[string]string{"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
)

func (c *Compare) jcc(op string) byte {
	if c.Unsigned {
		return jccUnsigned[op]
	}
	return jccSigned[op]
}

// condGen generates a condition's code inside a payload whose stack holds,
// from rsp up: the application's rax, its rflags, then the 128-byte red
// zone skipped (spAdj bytes in all above the application's rsp).
type condGen struct {
	e     *emitter
	app   uint64
	spAdj int64
	// extra is what the code pushed on top of the save area, and saved
	// where the application's registers are, relative to the save area
	// (rax at 0, rflags at 8; registers pushed later at negative offsets).
	extra  int64
	saved  map[string]int64
	labels []uint64 // label -> address, 0 until placed
	fixups []fixup
}

func newCondGen(e *emitter, app uint64) *condGen {
	return &condGen{e: e, app: app, spAdj: redZone + 16, saved: map[string]int64{"rax": 0, "rflags": 8}}
}

type fixup struct {
	at    uint64 // address of a jcc/jmp rel32's displacement
	label int
}

func (g *condGen) newLabel() int { g.labels = append(g.labels, 0); return len(g.labels) - 1 }

func (g *condGen) place(l int) { g.labels[l] = g.e.pc() }

// body is the table entry of code between the saves and the restores, with
// extra bytes pushed on top of them.
func (g *condGen) body(extra int64) Entry {
	top := g.extra + extra
	spills := make(map[string]int64, len(g.saved))
	for r, off := range g.saved {
		spills[r] = top + off
	}
	return Entry{AppPC: g.app, Payload: true, SPAdjust: g.spAdj + top, FlagsAt: 8 + top, Spills: spills}
}

// jumpTo appends a jcc (cc != 0) or jmp rel32 to label l.
func (g *condGen) jumpTo(cc byte, l int) {
	var b []byte
	if cc == 0 {
		b = []byte{0xe9, 0, 0, 0, 0}
	} else {
		b = []byte{0x0f, cc, 0, 0, 0, 0}
	}
	at := g.e.pc() + uint64(len(b)) - 4
	g.e.add(b, g.body(0))
	g.fixups = append(g.fixups, fixup{at, l})
}

// resolve fills in the jumps' displacements.
func (g *condGen) resolve() error {
	for _, f := range g.fixups {
		to := g.labels[f.label]
		if to == 0 {
			return errors.New("internal error: a condition's label was never placed")
		}
		binary.LittleEndian.PutUint32(g.e.code[f.at-g.e.base:], uint32(int32(int64(to)-int64(f.at+4))))
	}
	return nil
}

// jumpIfFalse appends code that goes on when x holds and jumps to l when not.
func (g *condGen) jumpIfFalse(x *Expr, l int) error {
	switch {
	case x.Cmp != nil:
		if err := g.compare(x.Cmp); err != nil {
			return err
		}
		g.jumpTo(x.Cmp.jcc(negated[x.Cmp.Op]), l)
	case x.Op == "&&":
		if err := g.jumpIfFalse(x.L, l); err != nil {
			return err
		}
		return g.jumpIfFalse(x.R, l)
	default: // ||
		yes := g.newLabel()
		if err := g.jumpIfTrue(x.L, yes); err != nil {
			return err
		}
		if err := g.jumpIfFalse(x.R, l); err != nil {
			return err
		}
		g.place(yes)
	}
	return nil
}

// jumpIfTrue appends code that jumps to l when x holds and goes on when not.
func (g *condGen) jumpIfTrue(x *Expr, l int) error {
	switch {
	case x.Cmp != nil:
		if err := g.compare(x.Cmp); err != nil {
			return err
		}
		g.jumpTo(x.Cmp.jcc(x.Cmp.Op), l)
	case x.Op == "||":
		if err := g.jumpIfTrue(x.L, l); err != nil {
			return err
		}
		return g.jumpIfTrue(x.R, l)
	default: // &&
		no := g.newLabel()
		if err := g.jumpIfFalse(x.L, no); err != nil {
			return err
		}
		if err := g.jumpIfTrue(x.R, l); err != nil {
			return err
		}
		g.place(no)
	}
	return nil
}

// compare appends: load the value into rax, compare with the constant (the
// flags then say how the value compares).
func (g *condGen) compare(c *Compare) error {
	if err := g.load(c.Value); err != nil {
		return err
	}
	if c.Const == int64(int32(c.Const)) {
		cmp := []byte{0x48, 0x3d, 0, 0, 0, 0} // cmp $imm32,%rax (sign-extended)
		binary.LittleEndian.PutUint32(cmp[2:], uint32(int32(c.Const)))
		g.e.add(cmp, g.body(0))
		return nil
	}
	g.e.add([]byte{0x51}, g.body(0)) // push %rcx
	mov := []byte{0x48, 0xb9}        // movabs $imm64,%rcx
	mov = binary.LittleEndian.AppendUint64(mov, uint64(c.Const))
	g.e.add(mov, g.body(8))
	g.e.add([]byte{0x48, 0x39, 0xc8}, g.body(8)) // cmp %rcx,%rax
	g.e.add([]byte{0x59}, g.body(8))             // pop %rcx (the flags stay)
	return nil
}

// Loads into rax, by size and signedness, from a ModRM memory operand
// (appended after the opcode) or from eax/ax/al.
var (
	loadOps = map[[2]int][]byte{ // {size, signed}
		{8, 0}: {0x48, 0x8b}, {8, 1}: {0x48, 0x8b},
		{4, 0}: {0x8b}, {4, 1}: {0x48, 0x63},
		{2, 0}: {0x0f, 0xb7}, {2, 1}: {0x48, 0x0f, 0xbf},
		{1, 0}: {0x0f, 0xb6}, {1, 1}: {0x48, 0x0f, 0xbe},
	}
	extendRAX = map[[2]int][]byte{
		{8, 0}: nil, {8, 1}: nil,
		{4, 0}: {0x89, 0xc0}, {4, 1}: {0x48, 0x63, 0xc0},
		{2, 0}: {0x0f, 0xb7, 0xc0}, {2, 1}: {0x48, 0x0f, 0xbf, 0xc0},
		{1, 0}: {0x0f, 0xb6, 0xc0}, {1, 1}: {0x48, 0x0f, 0xbe, 0xc0},
	}
)

func sizeKey(v Value) [2]int {
	k := [2]int{v.Size, 0}
	if v.Signed {
		k[1] = 1
	}
	return k
}

// regToRAX appends code that puts the application's value of register r
// (plus add, for rsp) into rax.
func (g *condGen) regToRAX(r string, add int64) error {
	if off, ok := g.saved[r]; ok && r != "rflags" {
		mov := []byte{0x48, 0x8b, 0x84, 0x24, 0, 0, 0, 0} // mov disp32(%rsp),%rax: the saved value
		binary.LittleEndian.PutUint32(mov[4:], uint32(int32(g.extra+off)))
		g.e.add(mov, g.body(0))
		return nil
	}
	switch r {
	case "rsp":
		off := g.spAdj + g.extra + add
		if off != int64(int32(off)) {
			return fmt.Errorf("stack offset %d out of reach", add)
		}
		lea := []byte{0x48, 0x8d, 0x84, 0x24, 0, 0, 0, 0} // lea disp32(%rsp),%rax
		binary.LittleEndian.PutUint32(lea[4:], uint32(int32(off)))
		g.e.add(lea, g.body(0))
	default:
		n, ok := regNumbers[r]
		if !ok {
			return fmt.Errorf("no register %q", r)
		}
		rex := byte(0x48)
		if n >= 8 {
			rex |= 0x04 // REX.R
		}
		g.e.add([]byte{rex, 0x89, 0xc0 | byte(n&7)<<3}, g.body(0)) // mov %r,%rax
	}
	return nil
}

// load appends code that puts v, extended to 64 bits, into rax.
func (g *condGen) load(v Value) error {
	k := sizeKey(v)
	switch {
	case v.Reg != "":
		if err := g.regToRAX(v.Reg, 0); err != nil {
			return err
		}
		if ext := extendRAX[k]; len(ext) > 0 {
			g.e.add(ext, g.body(0))
		}
	case v.Base != "":
		off := v.Off
		if v.Base == "rsp" {
			// The address itself, with the payload's pushes allowed for.
			if err := g.regToRAX("rsp", v.Off); err != nil {
				return err
			}
			off = 0
		} else if err := g.regToRAX(v.Base, 0); err != nil {
			return err
		}
		if off != int64(int32(off)) {
			return fmt.Errorf("offset %d out of reach", off)
		}
		ld := append(append([]byte(nil), loadOps[k]...), 0x80, 0, 0, 0, 0) // disp32(%rax)
		binary.LittleEndian.PutUint32(ld[len(ld)-4:], uint32(int32(off)))
		g.e.add(ld, g.body(0))
	case v.FS:
		if v.Off != int64(int32(v.Off)) {
			return fmt.Errorf("%%fs offset %d out of reach", v.Off)
		}
		ld := append(append([]byte{0x64}, loadOps[k]...), 0x04, 0x25, 0, 0, 0, 0) // %fs:disp32
		binary.LittleEndian.PutUint32(ld[len(ld)-4:], uint32(int32(v.Off)))
		g.e.add(ld, g.body(0))
	default:
		ld := append(append([]byte(nil), loadOps[k]...), 0x05, 0, 0, 0, 0) // disp32(%rip)
		if err := ripRel32(ld, len(ld)-4, g.e.pc(), len(ld), v.Addr); err != nil {
			return err
		}
		g.e.add(ld, g.body(0))
	}
	return nil
}

// stopPayload appends the payload of a conditional stop at app: when x
// holds, every register is put back and the thread reaches trap (a nop
// where the caller plants a breakpoint: a stop there is the application's
// state at app, but for the pc), then goes on at the relocated
// instructions; when it does not, it goes there at once (x nil: every hit
// stops). reloc is the
// address the relocated instructions start at (right after the payload).
func (e *emitter) stopPayload(app uint64, x *Expr) (trap, reloc uint64, err error) {
	if x == nil {
		// No condition: every hit stops.
		trap = e.pc()
		e.add([]byte{0x90}, Entry{AppPC: app, Payload: true, AppRegs: true, FlagsAt: -1})
		return trap, e.pc(), nil
	}
	g := newCondGen(e, app)
	e.add(leaSkipRedZone, Entry{AppPC: app, Payload: true, AppRegs: true, FlagsAt: -1})
	e.add(pushfq, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone, FlagsAt: -1})
	e.add([]byte{0x50}, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone + 8, FlagsAt: 0}) // push %rax
	no := g.newLabel()
	if err := g.jumpIfFalse(x, no); err != nil {
		return 0, 0, fmt.Errorf("condition %s: %w", x, err)
	}
	restore := func() {
		e.add([]byte{0x58}, g.body(0)) // pop %rax
		e.add(popfq, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone + 8, FlagsAt: 0})
		e.add(leaBackRedZone, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone, FlagsAt: -1})
	}
	restore()
	trap = e.pc()
	e.add([]byte{0x90}, Entry{AppPC: app, Payload: true, AppRegs: true, FlagsAt: -1})
	jmp := e.pc()
	e.add([]byte{0xe9, 0, 0, 0, 0}, Entry{AppPC: app, Payload: true, AppRegs: true, FlagsAt: -1})
	g.place(no)
	restore()
	reloc = e.pc()
	binary.LittleEndian.PutUint32(e.code[jmp+1-e.base:], uint32(int32(int64(reloc)-int64(jmp+5))))
	if err := g.resolve(); err != nil {
		return 0, 0, err
	}
	return trap, reloc, nil
}
