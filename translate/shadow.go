package translate

// Shadow is the record of every byte sonde changed in one address space
// (breakpoint int3s now, jump patches later): the application's original byte
// under each, the byte sonde put there, and who owns the change. Reads through
// the agent show the original bytes (Hide), writes under a patch update the
// original and keep the patch (Write), and removing a patch or detaching puts
// the originals back (Unpatch, Each). It is not safe for concurrent use: its
// owner (the backend's memory lock) serializes it.
type Shadow struct {
	m map[uint64]shadowByte
}

type shadowByte struct {
	orig, patch byte
	owner       string
}

// Patch records that sonde wrote patch over orig at addr (same lengths).
func (s *Shadow) Patch(addr uint64, orig, patch []byte, owner string) {
	if s.m == nil {
		s.m = map[uint64]shadowByte{}
	}
	for i := range orig {
		if i < len(patch) {
			s.m[addr+uint64(i)] = shadowByte{orig[i], patch[i], owner}
		}
	}
}

// Unpatch forgets the n patched bytes at addr and returns their originals
// (zeros where nothing was patched: callers only unpatch what they patched).
func (s *Shadow) Unpatch(addr uint64, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		a := addr + uint64(i)
		if b, ok := s.m[a]; ok {
			out[i] = b.orig
			delete(s.m, a)
		}
	}
	return out
}

// Original returns the application's byte under a patch at addr.
func (s *Shadow) Original(addr uint64) (byte, bool) {
	b, ok := s.m[addr]
	return b.orig, ok
}

// Owner returns who patched the byte at addr ("" if nobody).
func (s *Shadow) Owner(addr uint64) string { return s.m[addr].owner }

// Len returns the number of patched bytes.
func (s *Shadow) Len() int { return len(s.m) }

// Hide replaces, in buf (read raw from addr), every patched byte with the
// application's original.
func (s *Shadow) Hide(addr uint64, buf []byte) {
	if len(s.m) == 0 {
		return
	}
	if len(buf) < len(s.m) {
		for i := range buf {
			if b, ok := s.m[addr+uint64(i)]; ok {
				buf[i] = b.orig
			}
		}
		return
	}
	for a, b := range s.m {
		if a >= addr && a-addr < uint64(len(buf)) {
			buf[a-addr] = b.orig
		}
	}
}

// Write prepares a write of data at addr by the application's side (a user,
// a debugger client): bytes under patches become the new originals and the
// returned bytes, to be written instead of data, keep the patches. changed is
// called for each patched address whose original was replaced.
func (s *Shadow) Write(addr uint64, data []byte, changed func(addr uint64, orig byte)) []byte {
	out := append([]byte(nil), data...)
	for a, b := range s.m {
		if a >= addr && a-addr < uint64(len(out)) {
			b.orig = out[a-addr]
			s.m[a] = b
			out[a-addr] = b.patch
			if changed != nil {
				changed(a, b.orig)
			}
		}
	}
	return out
}

// Each calls f for every patched byte with its original (in no order).
func (s *Shadow) Each(f func(addr uint64, orig byte)) {
	for a, b := range s.m {
		f(a, b.orig)
	}
}

// Reset forgets every patch (the address space is gone: exec, exit).
func (s *Shadow) Reset() { s.m = nil }
