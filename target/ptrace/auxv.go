package ptrace

import (
	"fmt"

	"github.com/sondedbg/sonde/target"
)

// Auxv implements target.AuxvReader: the process's ELF auxiliary vector
// from /proc/PID/auxv. Package modules takes the executable from its
// AT_ENTRY; without it the lowest mapped file was taken for the executable,
// wrong whenever a file is mapped below it (qemu-user maps its guest
// program under itself: every qemu frame printed "from /usr/bin/qemu-x86_64"
// and the backtrace went on past main).
func (b *Backend) Auxv(proc *target.Context) ([]byte, error) {
	p, err := b.procOf(proc, "auxv")
	if err != nil {
		return nil, err
	}
	data, err := readFile(fmt.Sprintf("/proc/%d/auxv", p.pid))
	if err != nil {
		return nil, target.Errorf(target.CodeOther, "auxv", proc.ID(), err)
	}
	return data, nil
}
