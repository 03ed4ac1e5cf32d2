package core

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Layout of struct elf_prstatus on x86-64 (include/linux/elfcore.h).
const (
	prstatusRegOffset = 112
	prstatusRegSize   = 27 * 8 // struct user_regs_struct
	prstatusSize      = 336
)

// PRStatus is a thread's NT_PRSTATUS note: its ids, signal state, times and
// general registers.
type PRStatus struct {
	// Signal, Code and Errno are pr_info (the kernel fills only the signal).
	Signal int32
	Code   int32
	Errno  int32
	// CurrentSignal is pr_cursig: the signal being delivered when the dump was
	// made (the fatal one for kernel cores, for every thread).
	CurrentSignal int16
	Pending       uint64 // pr_sigpend: pending signals, bit n-1 for signal n
	Blocked       uint64 // pr_sighold: blocked signals
	TID           int32  // pr_pid: the thread id
	PPID          int32
	PGID          int32
	SID           int32
	UserTime      time.Duration
	SystemTime    time.Duration
	// Registers is struct user_regs_struct (216 bytes), copied out of the core.
	Registers []byte
	// FPValid is pr_fpvalid: an NT_FPREGSET note follows for this thread.
	FPValid bool
}

// ParsePRStatus decodes an NT_PRSTATUS descriptor. A descriptor shorter than
// the x86-64 layout is a *NoteError; longer ones are accepted (extra bytes are
// ignored) because nothing after pr_fpvalid is read.
func ParsePRStatus(desc []byte) (*PRStatus, error) {
	if len(desc) < prstatusRegOffset+prstatusRegSize {
		return nil, &NoteError{Type: NT_PRSTATUS, Msg: fmt.Sprintf("descriptor has %d bytes, x86-64 needs %d", len(desc), prstatusSize)}
	}
	le := binary.LittleEndian
	tv := func(off int) time.Duration {
		sec := int64(le.Uint64(desc[off:]))
		usec := int64(le.Uint64(desc[off+8:]))
		return time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
	}
	s := &PRStatus{
		Signal:        int32(le.Uint32(desc[0:])),
		Code:          int32(le.Uint32(desc[4:])),
		Errno:         int32(le.Uint32(desc[8:])),
		CurrentSignal: int16(le.Uint16(desc[12:])),
		Pending:       le.Uint64(desc[16:]),
		Blocked:       le.Uint64(desc[24:]),
		TID:           int32(le.Uint32(desc[32:])),
		PPID:          int32(le.Uint32(desc[36:])),
		PGID:          int32(le.Uint32(desc[40:])),
		SID:           int32(le.Uint32(desc[44:])),
		UserTime:      tv(48),
		SystemTime:    tv(64),
		Registers:     append([]byte(nil), desc[prstatusRegOffset:prstatusRegOffset+prstatusRegSize]...),
	}
	if len(desc) >= prstatusRegOffset+prstatusRegSize+4 {
		s.FPValid = le.Uint32(desc[prstatusRegOffset+prstatusRegSize:]) != 0
	}
	return s, nil
}
