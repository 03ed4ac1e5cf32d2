package core

import (
	"encoding/binary"

	"github.com/sondedbg/sonde/target"
)

// AuxvBytes returns the core's NT_AUXV as the raw vector target.Context's
// Auxv serves (with its AT_NULL end), so that package modules finds the
// executable by AT_ENTRY in a core too, not as the lowest mapped file
// (qemu-user maps its guest program below itself).
func (c *Core) AuxvBytes(proc *target.Context) ([]byte, error) {
	if c.auxv == nil {
		return nil, target.Errorf(target.CodeUnsupported, "auxv", proc.ID(), nil)
	}
	out := make([]byte, 0, 16*(len(c.auxv)+1))
	for _, e := range append(c.auxv, AuxEntry{}) {
		out = binary.LittleEndian.AppendUint64(out, e.Tag)
		out = binary.LittleEndian.AppendUint64(out, e.Value)
	}
	return out, nil
}
