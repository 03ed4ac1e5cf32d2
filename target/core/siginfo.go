package core

import (
	"encoding/binary"
	"fmt"
)

// siginfoSize is sizeof(siginfo_t) on Linux.
const siginfoSize = 128

// SigInfo is an NT_SIGINFO note: the siginfo_t of the signal a thread was
// handling when the dump was made.
type SigInfo struct {
	Signal int32
	Errno  int32
	// Code is si_code: > 0 means the kernel raised it for a fault (SEGV_MAPERR,
	// BUS_ADRALN, ...), SI_USER (0), SI_TKILL (-6) and friends mean another
	// process or the thread itself sent it.
	Code int32
	// Addr is si_addr, the faulting address, for SIGSEGV, SIGBUS, SIGILL,
	// SIGFPE and SIGTRAP raised by the kernel (Code > 0).
	Addr uint64
	// SenderPID and SenderUID are si_pid and si_uid for signals sent by a
	// process (Code <= 0) and for SIGCHLD.
	SenderPID int32
	SenderUID uint32
}

// Signal numbers used to interpret si_code (x86-64 Linux).
const (
	sigILL  = 4
	sigTRAP = 5
	sigBUS  = 7
	sigFPE  = 8
	sigSEGV = 11
	sigCHLD = 17
)

// IsFault reports whether the kernel raised the signal for a faulting
// instruction (a synchronous exception), not a kill or raise.
func (s *SigInfo) IsFault() bool {
	switch s.Signal {
	case sigILL, sigTRAP, sigBUS, sigFPE, sigSEGV:
		return s.Code > 0
	}
	return false
}

// ParseSigInfo decodes an NT_SIGINFO descriptor.
func ParseSigInfo(desc []byte) (*SigInfo, error) {
	if len(desc) < siginfoSize {
		return nil, &NoteError{Type: NT_SIGINFO, Msg: fmt.Sprintf("descriptor has %d bytes, siginfo_t needs %d", len(desc), siginfoSize)}
	}
	le := binary.LittleEndian
	s := &SigInfo{
		Signal: int32(le.Uint32(desc[0:])),
		Errno:  int32(le.Uint32(desc[4:])),
		Code:   int32(le.Uint32(desc[8:])),
	}
	// The union starts at 16 on 64-bit.
	if s.IsFault() {
		s.Addr = le.Uint64(desc[16:])
	} else if s.Code <= 0 || s.Signal == sigCHLD {
		s.SenderPID = int32(le.Uint32(desc[16:]))
		s.SenderUID = le.Uint32(desc[20:])
	}
	return s, nil
}
