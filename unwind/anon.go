package unwind

import (
	"golang.org/x/arch/x86/x86asm"
)

// CodeChecker is an optional LookupIP method for code in no module — what
// JIT compilers (V8, LuaJIT, the JVM, .NET) write into anonymous executable
// memory. IsCode reports whether addr lies in executable memory of the
// target. Without it the engine accepts return addresses only in modules, and
// a walk that reaches JIT code ends there.
type CodeChecker interface {
	IsCode(addr uint64) bool
}

// JITNamer is an optional LookupIP method for a client that cannot read JIT
// code (a profile's sample holds only the stack) but knows where a JIT named
// its functions (its perf map). NamedCode reports whether addr lies in such a
// function: a frame-pointer return address there is taken without decoding
// the call before it.
type JITNamer interface {
	NamedCode(addr uint64) bool
}

// isCode reports whether addr is executable memory: in a module, or in a
// region the client's CodeChecker vouches for.
func (u *Unwinder) isCode(addr uint64) bool {
	if u.module(addr) != nil {
		return true
	}
	cc, ok := u.lookup.(CodeChecker)
	return ok && cc.IsCode(addr)
}

// validReturn reports whether ra is credible as a return address: it is
// canonical, lands in executable memory, and the instruction before it is a
// call. In a module the call check accepts code it cannot read (a core
// without the text); in memory no file backs, the bytes must be there and
// must decode to a call that ends exactly at ra.
func (u *Unwinder) validReturn(ra uint64) bool {
	if ra < 2 || !canonical(ra) {
		return false
	}
	if u.module(ra-1) != nil {
		return u.followsCall(ra)
	}
	if jn, ok := u.lookup.(JITNamer); ok && jn.NamedCode(ra-1) {
		return true
	}
	cc, ok := u.lookup.(CodeChecker)
	return ok && cc.IsCode(ra-1) && u.callEndsAt(ra)
}

// callEndsAt decodes backwards from ra: some instruction that starts 2 to 15
// bytes before ra must be a call whose encoding ends exactly at ra. A stack
// word that merely points into code (a function pointer, a jump table, the
// middle of an instruction) almost never passes.
//
// The verdicts are remembered for the walk: an interpreter's frames return
// to a handful of addresses, and decoding is the costly part. Not with
// Options.ReuseFrames, which must see every step read the bytes it depends
// on (memo.go).
func (u *Unwinder) callEndsAt(ra uint64) bool {
	if u.opts.ReuseFrames {
		return u.decodeCallEndsAt(ra)
	}
	for _, c := range u.calls[:u.nCalls] {
		if c.ra == ra {
			return c.call
		}
	}
	call := u.decodeCallEndsAt(ra)
	u.calls[u.callPos] = callVerdict{ra, call}
	u.callPos = (u.callPos + 1) % len(u.calls)
	u.nCalls = min(u.nCalls+1, len(u.calls))
	return call
}

// callVerdict is callEndsAt's answer for one return address.
type callVerdict struct {
	ra   uint64
	call bool
}

func (u *Unwinder) decodeCallEndsAt(ra uint64) bool {
	const maxLen = 15
	back := uint64(maxLen)
	if ra < back {
		back = ra
	}
	var code []byte
	for ; back >= 2; back-- {
		if code = u.read(ra-back, int(back)); code != nil {
			break
		}
	}
	if code == nil {
		return false
	}
	var arr [maxLen]byte // u.read's buffer is reused
	buf := arr[:copy(arr[:], code)]
	for k := 2; k <= len(buf); k++ {
		inst, err := x86asm.Decode(buf[len(buf)-k:], 64)
		if err == nil && inst.Len == k && inst.Op == x86asm.CALL {
			return true
		}
	}
	return false
}

// canonical reports whether addr is a canonical x86-64 address (bits 63..47
// all equal): anything else cannot be a pc, and a walk that computes one
// has read garbage.
func canonical(addr uint64) bool {
	top := addr >> 47
	return top == 0 || top == 1<<17-1
}

// anonymous steps from an exact frame (frame 0, or one a signal interrupted)
// whose pc lies in no module: JIT code, or a call through a bad pointer. In
// order: the prologue and epilogue positions, where the return address is at
// a known place; a validated frame-pointer chain; the return address at [sp]
// (a call that landed on a bad pc). Every candidate must pass validReturn:
// a frame the stack does not vouch for ends the walk instead.
func (u *Unwinder) anonymous(f, n *Frame) (StopReason, error) {
	if u.isCode(f.PC) {
		saved := *n
		if r, ok, err := u.prologue(f, n); ok && r == StopNone && err == nil && u.validReturn(n.PC) {
			return r, nil
		}
		*n = saved
		if r, ok, err := u.framePointer(f, n); ok {
			return r, err
		}
		*n = saved
	}
	if ra, ok := u.readWord(f.SP); ok && u.validReturn(ra) {
		return u.leaf(f, n, 0, MethodLeaf)
	}
	return StopNoUnwindInfo, ErrNoUnwindInfo
}
