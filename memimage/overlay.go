package memimage

// SetOriginal records that the target's bytes at addr in asid were original
// before sonde patched them (a breakpoint, a probe jump). From now on reads of
// those addresses return original, whatever the sections or the fallback hold.
// Newer calls win over older ones where they overlap. The bytes are copied.
func (im *Image) SetOriginal(asid ASID, addr uint64, original []byte) error {
	end, err := pieceRange(addr, uint64(len(original)))
	if err != nil {
		return err
	}
	s := &Section{name: "", size: uint64(len(original)), data: append([]byte(nil), original...)}
	return im.update(func(st *imageState) error {
		st.seq++
		st.overlay = st.overlay.add(asid, piece{begin: addr, end: end, section: s, seq: st.seq})
		return nil
	})
}

// ClearOriginal forgets the original bytes recorded for [addr, addr+size) in
// address spaces matching asid (the patch was removed), so reads there see the
// sections and the fallback again.
func (im *Image) ClearOriginal(asid ASID, addr, size uint64) error {
	end, err := pieceRange(addr, size)
	if err != nil {
		return err
	}
	return im.update(func(st *imageState) error {
		st.overlay = st.overlay.cut(asid, addr, end)
		return nil
	})
}

// applyOverlay puts original bytes over the n bytes just read at addr.
func applyOverlay(ov layer, buf []byte, asid ASID, addr uint64) {
	end := addr + uint64(len(buf)) // cannot wrap: reads stop at the last byte
	ov.overlapping(asid, addr, end, func(o *piece) {
		lo, hi := max(o.begin, addr), min(o.end, end)
		copy(buf[lo-addr:hi-addr], o.section.data[o.offset+(lo-o.begin):])
	})
}
