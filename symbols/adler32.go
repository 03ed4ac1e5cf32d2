package symbols

import "encoding/binary"

// adlerSum returns the Adler-32 checksum (RFC 1950) of p, which a zlib
// stream ends with. hash/adler32 adds one byte at a time (two dependent
// additions a byte); this takes 16 bytes a step, their sum and their
// position-weighted sum each from two multiplications of 16-bit lanes, a
// third of the inflation's checksum time on libc's debug sections.
func adlerSum(p []byte) uint32 {
	const mod = 65521
	// The sums stay below 2^64 for blocks far longer than this; the lanes
	// below cannot carry into each other (each lane's terms sum to at most
	// 4*255*8 < 2^16).
	const block = 1 << 16
	s1, s2 := uint64(1), uint64(0)
	for len(p) > 0 {
		q := p
		if len(q) > block {
			q = q[:block]
		}
		p = p[len(q):]
		for len(q) >= 16 {
			// Two words a step: the second's bytes come 8 after the first's.
			v0, v1 := binary.LittleEndian.Uint64(q), binary.LittleEndian.Uint64(q[8:])
			lo0, hi0 := v0&0x00ff00ff00ff00ff, (v0>>8)&0x00ff00ff00ff00ff
			lo1, hi1 := v1&0x00ff00ff00ff00ff, (v1>>8)&0x00ff00ff00ff00ff
			sum0 := ((lo0 + hi0) * 0x0001000100010001) >> 48
			sum1 := ((lo1 + hi1) * 0x0001000100010001) >> 48
			w0 := (lo0*(2|4<<16|6<<32|8<<48))>>48 + (hi0*(1|3<<16|5<<32|7<<48))>>48
			w1 := (lo1*(2|4<<16|6<<32|8<<48))>>48 + (hi1*(1|3<<16|5<<32|7<<48))>>48
			s2 += 16*s1 + 8*sum0 + w0 + w1
			s1 += sum0 + sum1
			q = q[16:]
		}
		for len(q) >= 8 {
			v := binary.LittleEndian.Uint64(q)
			lo := v & 0x00ff00ff00ff00ff        // bytes 0, 2, 4, 6
			hi := (v >> 8) & 0x00ff00ff00ff00ff // bytes 1, 3, 5, 7
			// s2 gains s1 once per byte: 8 s1, then each byte once for
			// itself and each byte after it (weights 8 down to 1).
			s2 += 8*s1 + (lo*(2|4<<16|6<<32|8<<48))>>48 + (hi*(1|3<<16|5<<32|7<<48))>>48
			s1 += ((lo + hi) * 0x0001000100010001) >> 48
			q = q[8:]
		}
		for _, b := range q {
			s1 += uint64(b)
			s2 += s1
		}
		s1 %= mod
		s2 %= mod
	}
	return uint32(s2<<16 | s1)
}
