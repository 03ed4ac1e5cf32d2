package probes

import (
	"fmt"

	"github.com/sondedbg/sonde/disasm"
)

// JumpLen is the length of the jmp rel32 a probe writes at its site.
const JumpLen = 5

// Function is the code of the function that contains a probe site, as read
// from the process (or its file).
type Function struct {
	Name string
	Lo   uint64 // first byte
	Code []byte // [Lo, Lo+len(Code))
	// Padding is what follows the function up to the next symbol (at most
	// 15 bytes are looked at): alignment nops or int3s, never executed, where
	// a probe on the function's last ret may spill over.
	Padding []byte
	// Neighbors are the functions within a short branch's reach (128
	// bytes) of this one: their direct branches into a patched range are
	// found by decoding them (incoming.go). Nil when unknown.
	Neighbors []Function
}

// bytesAt returns the n bytes of the function (and its padding) at addr, or
// nil.
func (f Function) bytesAt(addr uint64, n int) []byte {
	all := append(append([]byte(nil), f.Code...), f.Padding...)
	if addr < f.Lo || addr-f.Lo+uint64(n) > uint64(len(all)) {
		return nil
	}
	return all[addr-f.Lo : addr-f.Lo+uint64(n)]
}

// padLen returns how many bytes of fn.Padding are padding instructions
// (nop, int3), up to the next 16-byte boundary.
func padLen(fn Function) int {
	n := 0
	for n < len(fn.Padding) && n < 15 {
		in, err := disasm.Decode(fn.Padding[n:], fn.Hi()+uint64(n))
		if err != nil || in.Len <= 0 || n+in.Len > len(fn.Padding) {
			break
		}
		raw, ok := in.Raw()
		if !ok || (raw.Op.String() != "NOP" && raw.Op.String() != "INT") {
			break
		}
		if raw.Op.String() == "INT" && in.Bytes[0] != 0xcc {
			break
		}
		n += in.Len
	}
	return n
}

// Hi returns the first address after the function.
func (f Function) Hi() uint64 { return f.Lo + uint64(len(f.Code)) }

// Site is a probe site found safe to patch: the whole instructions that the
// jump replaces, in order.
type Site struct {
	Addr  uint64
	Insns []disasm.Instruction
	Len   int // bytes covered: >= JumpLen
}

// UnsafeError says why a site cannot be jump-patched; the probe falls back to
// a breakpoint and shows Reason.
type UnsafeError struct {
	Addr   uint64
	Reason string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("probe at %#x cannot be jump-patched: %s", e.Addr, e.Reason)
}

func unsafe(addr uint64, format string, args ...any) error {
	return &UnsafeError{Addr: addr, Reason: fmt.Sprintf(format, args...)}
}

// maxFunction bounds the code decoded for one site (a symbol's size comes
// from the file, which is untrusted).
const maxFunction = 4 << 20

// Decode decodes a function linearly. It fails on bytes that do not decode,
// since then instruction boundaries (and branch targets) are not known.
func Decode(fn Function) ([]disasm.Instruction, error) {
	if len(fn.Code) > maxFunction {
		return nil, fmt.Errorf("function %s at %#x: %d bytes, more than %d", fn.Name, fn.Lo, len(fn.Code), maxFunction)
	}
	var out []disasm.Instruction
	for off := 0; off < len(fn.Code); {
		in, err := disasm.Decode(fn.Code[off:], fn.Lo+uint64(off))
		if err != nil || in.Kind == disasm.Bad || in.Len <= 0 {
			return nil, unsafe(fn.Lo+uint64(off), "bytes at %#x in %s do not decode as an instruction", fn.Lo+uint64(off), fn.Name)
		}
		out = append(out, in)
		off += in.Len
	}
	return out, nil
}

// Analyze checks that the site at addr in fn can be jump-patched and returns
// the instructions the jump covers. The error is an *UnsafeError when the
// probe has to be a breakpoint instead.
func Analyze(fn Function, addr uint64) (Site, error) {
	if addr < fn.Lo || addr >= fn.Hi() {
		return Site{}, unsafe(addr, "not inside function %s [%#x, %#x)", fn.Name, fn.Lo, fn.Hi())
	}
	insns, err := Decode(fn)
	if err != nil {
		return Site{}, err
	}
	first := -1
	for i := range insns {
		if insns[i].Address == addr {
			first = i
			break
		}
	}
	if first < 0 {
		return Site{}, unsafe(addr, "%#x is not an instruction boundary of %s", addr, fn.Name)
	}
	j := first
	for n := 0; n < JumpLen; j++ {
		if j >= len(insns) {
			return Site{}, unsafe(addr, "the function ends %d bytes after the site: the %d-byte jump does not fit", n, JumpLen)
		}
		n += insns[j].Len
	}
	return checkRange(insns, first, j, 0)
}

// checkRange checks the whole instructions insns[i:j] of a decoded function
// as a patched range: at least JumpLen bytes, every one movable, only the
// last may leave or call (a call's return address must not be inside), and
// no branch of the function lands inside it (its first byte may be a target:
// the jump is there).
//
// pad bytes of padding after insns[j-1] (the function's last ret) are
// covered too: never executed, only overwritten.
func checkRange(insns []disasm.Instruction, i, j, pad int) (Site, error) {
	addr := insns[i].Address
	site := Site{Addr: addr}
	for k := i; k < j; k++ {
		in := insns[k]
		if why := unmovable(&in); why != "" {
			return Site{}, unsafe(addr, "%s at %#x in the patched range", why, in.Address)
		}
		site.Insns = append(site.Insns, in)
		site.Len += in.Len
		if k < j-1 && in.Flow() == disasm.FlowCall {
			return Site{}, unsafe(addr, "the call at %#x would return to %#x, inside the patched range", in.Address, in.Next())
		}
		if k < j-1 && endsFlow(&in) {
			return Site{}, unsafe(addr, "the code ends (%s at %#x) %d bytes after the site: the %d-byte jump does not fit", in.Flow(), in.Address, site.Len, JumpLen)
		}
	}
	if pad > 0 && !endsFlow(&insns[j-1]) {
		return Site{}, unsafe(addr, "internal error: padding after an instruction that falls through")
	}
	site.Len += pad
	if site.Len < JumpLen {
		return Site{}, unsafe(addr, "the range is %d bytes: the %d-byte jump does not fit", site.Len, JumpLen)
	}
	end := addr + uint64(site.Len)
	for k := range insns {
		in := &insns[k]
		if t, ok := in.BranchTarget(); ok && t > addr && t < end {
			return Site{}, unsafe(addr, "the branch at %#x jumps to %#x, inside the patched range [%#x, %#x)", in.Address, t, addr, end)
		}
		if f := in.Flow(); f == disasm.FlowJump {
			if _, direct := in.BranchTarget(); !direct && !tailJump(insns, k) {
				return Site{}, unsafe(addr, "the indirect jump at %#x (a jump table?) may land inside the patched range", in.Address)
			}
		}
	}
	return site, nil
}

// exitSite finds a patched range that ends with the exit insns[x]: the
// shortest one that is safe, starting at most a few instructions back.
func exitSite(insns []disasm.Instruction, x int, pad int) (Site, error) {
	end := insns[x].Next()
	i := x
	for i >= 0 && end-insns[i].Address < JumpLen {
		i--
	}
	var first error
	if x == len(insns)-1 && pad > 0 {
		// The last ret: a range from an instruction close before it, spilling
		// over into the padding behind it.
		for k := x; k >= 0 && k > x-4; k-- {
			n := int(end - insns[k].Address)
			if n+pad < JumpLen {
				continue
			}
			site, err := checkRange(insns, k, x+1, JumpLen-min(n, JumpLen))
			if err == nil {
				return site, nil
			}
			if first == nil {
				first = err
			}
		}
	}
	if i < 0 {
		if first != nil {
			return Site{}, first
		}
		return Site{}, unsafe(insns[x].Address, "the function is shorter than the %d-byte jump before its exit", JumpLen)
	}
	for k := i; k >= 0 && k > i-6; k-- {
		site, err := checkRange(insns, k, x+1, 0)
		if err == nil {
			return site, nil
		}
		if first == nil {
			first = err
		}
	}
	return Site{}, first
}

// unmovable says why an instruction cannot run from a trampoline, or "".
func unmovable(in *disasm.Instruction) string {
	switch in.Flow() {
	case disasm.FlowTrap:
		return "a trap or breakpoint instruction"
	case disasm.FlowSyscall:
		return "a system call"
	}
	if raw, ok := in.Raw(); ok {
		switch raw.Op.String() {
		case "LOOP", "LOOPE", "LOOPNE", "JCXZ", "JECXZ", "JRCXZ", "XBEGIN":
			return "an instruction with only a short relative form (" + raw.Op.String() + ")"
		}
	}
	return ""
}

// endsFlow reports whether execution never falls through to the next byte.
func endsFlow(in *disasm.Instruction) bool {
	switch in.Flow() {
	case disasm.FlowJump, disasm.FlowReturn, disasm.FlowTrap:
		return true
	}
	return false
}

// tailJump reports whether the indirect jump insns[i] leaves the function: a
// jump through memory or a register right after the frame was torn down is
// taken for a tail call (jmp *%rax after leave/pop, or a PLT-style jmp
// *disp(%rip)); a jump table's jmp *(%rdx,%rax,8) or jmp *%rax after an add
// of a table base is not.
func tailJump(insns []disasm.Instruction, i int) bool {
	in := &insns[i]
	if _, rip := in.MemoryTarget(); rip {
		return true // jmp *x(%rip): through a GOT slot
	}
	if i == 0 {
		return false
	}
	prev, ok := insns[i-1].Raw()
	if !ok {
		return false
	}
	switch prev.Op.String() {
	case "POP", "LEAVE":
		return true
	}
	return false
}

// Exits returns the addresses of the function's exits: each ret and each
// jump that leaves the function (a tail call: a direct jump outside it, or an
// indirect one taken for a tail call).
func Exits(fn Function) ([]uint64, error) {
	insns, err := Decode(fn)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for i := range insns {
		in := &insns[i]
		switch in.Flow() {
		case disasm.FlowReturn:
			out = append(out, in.Address)
		case disasm.FlowJump:
			if t, ok := in.BranchTarget(); ok {
				if t < fn.Lo || t >= fn.Hi() {
					out = append(out, in.Address)
				}
			} else if tailJump(insns, i) {
				out = append(out, in.Address)
			}
		}
	}
	return out, nil
}
