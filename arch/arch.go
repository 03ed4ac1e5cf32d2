// Package arch holds per-ISA facts that every other layer of sonde shares: the
// register set with its names, sizes, DWARF numbers and where each register lives
// in the kernel's register-set layouts, the breakpoint instruction, and the
// pointer size. It knows nothing about processes; it is data.
//
// Only x86-64 exists today (AMD64). The Arch type is the seam for arm64.
package arch

import (
	"strings"
	"sync"
)

// RegisterSet says which kernel register set a register lives in.
type RegisterSet int

const (
	// SetGeneral is struct user_regs_struct: what PTRACE_GETREGSET with NT_PRSTATUS
	// returns and what a core's NT_PRSTATUS note carries in pr_reg.
	SetGeneral RegisterSet = iota
	// SetXState is the XSAVE area (standard, non-compacted format): NT_X86_XSTATE.
	// Its first 512 bytes are the FXSAVE image (NT_PRFPREG / NT_FPREGSET).
	SetXState
)

// Role marks registers that debuggers treat specially (TCF's register Role).
type Role string

const (
	RolePC Role = "PC"
	RoleSP Role = "SP"
	RoleFP Role = "FP"
)

// Register describes one architectural register.
type Register struct {
	Name   string
	Group  string // "general", "segment", "fpu", "sse", "avx", "avx512"
	Set    RegisterSet
	Offset int // byte offset in Set's layout
	Size   int // bytes
	DWARF  int // DWARF register number, or -1 if it has none
	Role   Role
	Float  bool
	// XComponent is the XSAVE state component a SetXState register belongs to
	// (0 x87, 1 SSE, 2 AVX, 5 opmask, 6 ZMM_Hi256, 7 Hi16_ZMM); the register
	// exists only when XCR0 enables that component.
	XComponent int
}

// Arch is everything sonde needs to know about one instruction set.
type Arch struct {
	Name          string
	PtrSize       int
	Breakpoint    []byte // the software breakpoint instruction
	MaxInsnSize   int
	GeneralSize   int // size of the SetGeneral layout in bytes
	Registers     []Register
	PCRegister    int // DWARF number of the program counter
	SPRegister    int // DWARF number of the stack pointer
	FPRegister    int // DWARF number of the frame pointer
	RARegister    int // DWARF column of the return address in CFI
	HardwareSlots int // number of hardware breakpoint/watchpoint slots
	// The indexes are built on first use: AMD64 is a package variable, and
	// verbs that never name a register (sonde perf) need not build them.
	indexOnce sync.Once
	byName    map[string]*Register
	byDWARF   map[int]*Register
}

// ByName returns the register called name (case-insensitive), or nil.
func (a *Arch) ByName(name string) *Register {
	a.indexOnce.Do(a.index)
	return a.byName[strings.ToLower(name)]
}

// ByDWARF returns the register with DWARF number n, or nil.
func (a *Arch) ByDWARF(n int) *Register {
	a.indexOnce.Do(a.index)
	return a.byDWARF[n]
}

func (a *Arch) index() {
	a.byName = make(map[string]*Register, len(a.Registers))
	a.byDWARF = make(map[int]*Register, len(a.Registers))
	for i := range a.Registers {
		r := &a.Registers[i]
		a.byName[strings.ToLower(r.Name)] = r
		if r.DWARF >= 0 {
			if _, dup := a.byDWARF[r.DWARF]; !dup {
				a.byDWARF[r.DWARF] = r
			}
		}
	}
}
