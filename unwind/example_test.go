package unwind_test

import (
	"fmt"

	"github.com/sondedbg/sonde/unwind"
)

// stackCopy is a minimal client: registers and one copied memory region (a
// perf sample's stack, say). Its fields are the client's state — uwx's token.
type stackCopy struct {
	regs    unwind.Registers
	base    uint64
	bytes   []byte
	modules []*unwind.Module // each built once, with SetSources(ReadSources(elfFile))
}

func (s *stackCopy) ReadMemory(buf []byte, addr uint64) (int, error) {
	if addr < s.base || addr-s.base >= uint64(len(s.bytes)) {
		return 0, nil // unreadable: a short read, not an error
	}
	return copy(buf, s.bytes[addr-s.base:]), nil
}

func (s *stackCopy) ReadRegister(reg int) (uint64, bool) { return s.regs.Get(reg) }

func (s *stackCopy) LookupModule(pc uint64) (*unwind.Module, error) {
	for _, m := range s.modules {
		if pc >= m.Start && pc < m.End {
			return m, nil // the same *Module every time: it carries the row cache
		}
	}
	return nil, nil
}

func (s *stackCopy) SymbolInfo(m *unwind.Module, pc uint64) ([]unwind.Symbol, error) {
	return nil, nil // plug a symbolizer in here: innermost inlined call first
}

// Example shows the two ways to walk: frame by frame, and the whole stack.
func Example() {
	client := &stackCopy{}
	u := unwind.New(client, client, nil)
	if err := u.Init(); err != nil {
		return
	}
	for {
		f := u.Frame()
		fmt.Printf("%#x sp=%#x cfa=%#x %v\n", f.PC, f.SP, f.CFA, f.Kind)
		if !u.Step() {
			break
		}
	}
	fmt.Println("stopped:", u.StopReason(), u.Err())

	u.Init()
	trace := u.Backtrace(unwind.BacktraceOptions{})
	for _, f := range trace.Frames {
		fmt.Printf("#%d %#x %s\n", f.Index, f.PC, f.Symbol.Function)
	}
}
