package core

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// Layout of struct elf_prpsinfo on x86-64.
const prpsinfoSize = 136

// PRPSInfo is the process's NT_PRPSINFO note.
type PRPSInfo struct {
	State byte   // pr_sname: 'R', 'S', 'D', 'T', 'Z', ...
	Nice  int8   // pr_nice
	Flags uint64 // pr_flag: the task's PF_* flags
	UID   uint32
	GID   uint32
	PID   int32
	PPID  int32
	PGID  int32
	SID   int32
	// Name is pr_fname: the command name (at most 15 bytes, as in /proc/PID/comm).
	Name string
	// Args is pr_psargs: the start of the command line (at most 79 bytes),
	// arguments separated by spaces.
	Args string
}

// ParsePRPSInfo decodes an NT_PRPSINFO descriptor.
func ParsePRPSInfo(desc []byte) (*PRPSInfo, error) {
	if len(desc) < prpsinfoSize {
		return nil, &NoteError{Type: NT_PRPSINFO, Msg: fmt.Sprintf("descriptor has %d bytes, x86-64 needs %d", len(desc), prpsinfoSize)}
	}
	le := binary.LittleEndian
	return &PRPSInfo{
		State: desc[1],
		Nice:  int8(desc[3]),
		Flags: le.Uint64(desc[8:]),
		UID:   le.Uint32(desc[16:]),
		GID:   le.Uint32(desc[20:]),
		PID:   int32(le.Uint32(desc[24:])),
		PPID:  int32(le.Uint32(desc[28:])),
		PGID:  int32(le.Uint32(desc[32:])),
		SID:   int32(le.Uint32(desc[36:])),
		Name:  cString(desc[40:56]),
		Args:  strings.TrimRight(cString(desc[56:136]), " "),
	}, nil
}

// cString returns b up to its first NUL (all of b if there is none).
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
