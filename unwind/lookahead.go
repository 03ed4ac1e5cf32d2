package unwind

// Return addresses no call pushed. An interpreter may push the address its
// callee returns to by hand and jump to the callee: HotSpot's template
// interpreter does for every invoke bytecode (the return address is its
// invoke-return entry, and the instruction before that entry is the
// previous template's dispatch jump, not a call). Such a return address
// fails validReturn, so the frame-pointer walk would end in the first
// interpreted frame — though the interpreter keeps a faithful rbp chain.
//
// lookaheadVouches takes such an address when the stack vouches for it: from
// the frame pointer that holds it, the chain of saved frame pointers goes up
// the stack (each link strictly above the last, aligned, at most
// maxFrameSize apart) through frames whose return addresses lie in
// executable memory in no file, and within maxLookahead links reaches a
// return address validReturn accepts — after a call, or in a module. A word
// that merely points into JIT code almost never sits in such a chain; a
// return address in a file must still follow a call. The frame gets
// MethodLookahead, so a client can tell users how its caller was found.

// maxLookahead bounds the links followed from one frame pointer: as many
// consecutive frames whose return addresses no call pushed (interpreted
// frames calling interpreted frames) as a walk takes this way.
const maxLookahead = 256

// lookaheadVouches reports whether ra, saved at bp+8 and not after a call,
// is vouched for by the frame-pointer chain above bp (see above). Frame
// pointers whose return addresses one look-ahead vouched for are remembered
// for the rest of the walk: the next frames are those very links, and the
// chain above them is the same.
func (u *Unwinder) lookaheadVouches(bp, ra uint64) bool {
	if !u.anonCode(ra) {
		return false
	}
	chain := append(u.spare[:0], bp)
	for range maxLookahead {
		next, ok := u.readWord(bp)
		if !ok || next <= bp || next&7 != 0 || next-bp > maxFrameSize {
			return false
		}
		r, ok := u.readWord(next + 8)
		if !ok {
			return false
		}
		if u.validReturn(r) {
			u.vouched, u.spare = chain, u.vouched
			return true
		}
		if !u.anonCode(r) {
			return false
		}
		chain = append(chain, next)
		bp = next
	}
	u.spare = chain
	return false
}

// vouchedFor reports whether the last look-ahead vouched for the return
// address saved at bp+8 — one that failed validReturn there. The frames it
// vouched for are the next ones of the walk, whose own steps read again the
// chain above them: Options.ReuseFrames still sees every frame's inputs
// (only the code before a vouched return address is not decoded again —
// code that would make it follow a call would change the frame's Method,
// not its caller).
func (u *Unwinder) vouchedFor(bp uint64) bool {
	for _, v := range u.vouched {
		if v == bp {
			return true
		}
	}
	return false
}

// anonCode reports whether ra could be a return address into executable
// memory in no file, as the client's CodeChecker says.
func (u *Unwinder) anonCode(ra uint64) bool {
	if ra < 2 || !canonical(ra) || u.module(ra-1) != nil {
		return false
	}
	cc, ok := u.lookup.(CodeChecker)
	return ok && cc.IsCode(ra-1)
}
