package arch

import "fmt"

// Offsets into struct user_regs_struct (x86-64). The kernel's order, not gdb's.
const (
	offR15 = 8 * iota
	offR14
	offR13
	offR12
	offRBP
	offRBX
	offR11
	offR10
	offR9
	offR8
	offRAX
	offRCX
	offRDX
	offRSI
	offRDI
	offOrigRAX
	offRIP
	offCS
	offEFLAGS
	offRSP
	offSS
	offFSBase
	offGSBase
	offDS
	offES
	offFS
	offGS
	amd64GeneralSize
)

// Offsets in the XSAVE standard format (Intel SDM vol. 1, 13.4; AMD uses the same
// offsets for these components).
const (
	XSaveFCW      = 0
	XSaveFSW      = 2
	XSaveFTW      = 4 // abridged tag word (one byte)
	XSaveFOP      = 6
	XSaveFIP      = 8
	XSaveFDP      = 16
	XSaveMXCSR    = 24
	XSaveST0      = 32  // 8 registers, 16 bytes apart, 10 bytes used
	XSaveXMM0     = 160 // 16 registers, 16 bytes each
	XSaveHeader   = 512 // XSTATE_BV at +0
	XSaveYMMHi    = 576 // AVX: upper 128 bits of ymm0-15
	XSaveOpmask   = 1088
	XSaveZMMHi256 = 1152 // upper 256 bits of zmm0-15
	XSaveHi16ZMM  = 1664 // zmm16-31, 64 bytes each
	// XCR0Offset is where Linux's ptrace and core-file XSTATE images record XCR0
	// (the enabled state components): the first word of the FXSAVE area's
	// software-reserved bytes (gdb reads it from the same place).
	XCR0Offset = 464
	// FXSaveSize is the legacy FXSAVE image size (NT_PRFPREG).
	FXSaveSize = 512
)

// AMD64 is x86-64 Linux user space.
var AMD64 = newAMD64()

func newAMD64() *Arch {
	gp := func(name string, off, dwarf int) Register {
		return Register{Name: name, Group: "general", Set: SetGeneral, Offset: off, Size: 8, DWARF: dwarf}
	}
	seg := func(name string, off, dwarf int) Register {
		return Register{Name: name, Group: "segment", Set: SetGeneral, Offset: off, Size: 8, DWARF: dwarf}
	}
	// gdb's `info registers` order.
	regs := []Register{
		gp("rax", offRAX, 0), gp("rbx", offRBX, 3), gp("rcx", offRCX, 2), gp("rdx", offRDX, 1),
		gp("rsi", offRSI, 4), gp("rdi", offRDI, 5), gp("rbp", offRBP, 6), gp("rsp", offRSP, 7),
		gp("r8", offR8, 8), gp("r9", offR9, 9), gp("r10", offR10, 10), gp("r11", offR11, 11),
		gp("r12", offR12, 12), gp("r13", offR13, 13), gp("r14", offR14, 14), gp("r15", offR15, 15),
		gp("rip", offRIP, 16), gp("eflags", offEFLAGS, 49),
		seg("cs", offCS, 51), seg("ss", offSS, 52), seg("ds", offDS, 53), seg("es", offES, 50),
		seg("fs", offFS, 54), seg("gs", offGS, 55),
		seg("fs_base", offFSBase, 58), seg("gs_base", offGSBase, 59),
		{Name: "orig_rax", Group: "system", Set: SetGeneral, Offset: offOrigRAX, Size: 8, DWARF: -1},
	}
	regs[6].Role = RoleFP
	regs[7].Role = RoleSP
	regs[16].Role = RolePC
	for i := 0; i < 8; i++ {
		regs = append(regs, Register{Name: fmt.Sprintf("st%d", i), Group: "fpu", Set: SetXState,
			Offset: XSaveST0 + 16*i, Size: 10, DWARF: 33 + i, Float: true})
	}
	fpu := []struct {
		name      string
		off, size int
		dwarf     int
	}{
		{"fctrl", XSaveFCW, 2, 65}, {"fstat", XSaveFSW, 2, 66}, {"ftag", XSaveFTW, 1, -1},
		{"fop", XSaveFOP, 2, -1}, {"fioff", XSaveFIP, 8, -1}, {"fooff", XSaveFDP, 8, -1},
	}
	for _, f := range fpu {
		regs = append(regs, Register{Name: f.name, Group: "fpu", Set: SetXState, Offset: f.off, Size: f.size, DWARF: f.dwarf})
	}
	for i := 0; i < 16; i++ {
		regs = append(regs, Register{Name: fmt.Sprintf("xmm%d", i), Group: "sse", Set: SetXState,
			Offset: XSaveXMM0 + 16*i, Size: 16, DWARF: 17 + i, XComponent: 1})
	}
	regs = append(regs, Register{Name: "mxcsr", Group: "sse", Set: SetXState, Offset: XSaveMXCSR, Size: 4, DWARF: 64, XComponent: 1})
	for i := 0; i < 16; i++ {
		regs = append(regs, Register{Name: fmt.Sprintf("ymm%dh", i), Group: "avx", Set: SetXState,
			Offset: XSaveYMMHi + 16*i, Size: 16, DWARF: -1, XComponent: 2})
	}
	for i := 0; i < 8; i++ {
		regs = append(regs, Register{Name: fmt.Sprintf("k%d", i), Group: "avx512", Set: SetXState,
			Offset: XSaveOpmask + 8*i, Size: 8, DWARF: 118 + i, XComponent: 5})
	}
	for i := 0; i < 16; i++ {
		regs = append(regs, Register{Name: fmt.Sprintf("zmm%dh", i), Group: "avx512", Set: SetXState,
			Offset: XSaveZMMHi256 + 32*i, Size: 32, DWARF: -1, XComponent: 6})
	}
	for i := 16; i < 32; i++ {
		regs = append(regs, Register{Name: fmt.Sprintf("zmm%d", i), Group: "avx512", Set: SetXState,
			Offset: XSaveHi16ZMM + 64*(i-16), Size: 64, DWARF: 67 + (i - 16), XComponent: 7})
	}
	a := &Arch{
		Name:          "x86_64",
		PtrSize:       8,
		Breakpoint:    []byte{0xcc},
		MaxInsnSize:   15,
		GeneralSize:   amd64GeneralSize,
		Registers:     regs,
		PCRegister:    16,
		SPRegister:    7,
		FPRegister:    6,
		RARegister:    16,
		HardwareSlots: 4,
	}
	return a
}

// DWARF register numbers of x86-64 (System V psABI, figure 3.36), for code that
// works with CFI and location expressions.
const (
	DwarfRAX    = 0
	DwarfRDX    = 1
	DwarfRCX    = 2
	DwarfRBX    = 3
	DwarfRSI    = 4
	DwarfRDI    = 5
	DwarfRBP    = 6
	DwarfRSP    = 7
	DwarfR8     = 8
	DwarfR15    = 15
	DwarfRIP    = 16 // also the return-address column in CFI
	DwarfXMM0   = 17
	DwarfRFLAGS = 49
	DwarfES     = 50
	DwarfCS     = 51
	DwarfSS     = 52
	DwarfDS     = 53
	DwarfFS     = 54
	DwarfGS     = 55
	DwarfFSBase = 58
	DwarfGSBase = 59
)
