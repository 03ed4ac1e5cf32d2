package variables

import (
	"encoding/binary"
	"errors"
	"testing"
)

// callerFrame is a memFrame whose caller is known.
type callerFrame struct {
	*memFrame
	caller *memFrame
}

func (c callerFrame) Caller() (Frame, *Reader) {
	if c.caller == nil {
		return nil, nil
	}
	return c.caller, &Reader{}
}

// TestEntryValues checks the three ways an entry value is answered: a stack
// slot read as the entry saw it, a callee-saved register from the caller's
// frame, and optimized out when nothing recovers it.
func TestEntryValues(t *testing.T) {
	m := &memFrame{base: 0x7000, mem: make([]byte, 256)}
	binary.LittleEndian.PutUint64(m.mem[64:], 0x2a) // at the CFA: the first stack argument slot
	r := &Reader{units: []unitInfo{{version: 5, dieRead: true}}}
	fn := &Scope{Kind: ScopeFunction}
	intType := &Type{Kind: KindBase, Size: 8, Encoding: EncSigned, Count: -1}
	read := func(f Frame, expr []byte) (int64, error) {
		v := &Variable{Name: "v", Type: intType, Loc: Location{Kind: LocExpr, Expr: expr}, Scope: fn}
		val, err := r.Read(v, f)
		if err != nil {
			return 0, err
		}
		return val.Int()
	}
	// DW_OP_entry_value(DW_OP_breg7 8; DW_OP_deref); DW_OP_stack_value:
	// on entry rsp was CFA-8, so the slot is at the CFA.
	if n, err := read(callerFrame{m, nil}, []byte{0xa3, 0x03, 0x77, 0x08, 0x06, 0x9f}); err != nil || n != 0x2a {
		t.Errorf("stack-slot entry value: %d %v", n, err)
	}
	// DW_OP_entry_value(DW_OP_reg3); DW_OP_stack_value: rbx is
	// callee-saved, the caller's frame has it (memFrame registers are
	// base + 8*reg).
	caller := &memFrame{base: 0x9000, mem: make([]byte, 16)}
	if n, err := read(callerFrame{m, caller}, []byte{0xa3, 0x01, 0x53, 0x9f}); err != nil || n != 0x9000+3*8 {
		t.Errorf("callee-saved entry value: %#x %v", n, err)
	}
	// DW_OP_entry_value(DW_OP_reg5): rdi is clobbered by calls and no call
	// site says what was passed: optimized out, never a guess.
	if _, err := read(callerFrame{m, caller}, []byte{0xa3, 0x01, 0x55, 0x9f}); !errors.Is(err, ErrOptimizedOut) {
		t.Errorf("unrecoverable entry value: %v", err)
	}
	if _, err := read(callerFrame{m, nil}, []byte{0xa3, 0x01, 0x53, 0x9f}); !errors.Is(err, ErrOptimizedOut) {
		t.Errorf("entry value without a caller: %v", err)
	}
}
