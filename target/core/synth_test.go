package core

import (
	"encoding/binary"
)

// This file builds small synthetic core files for the unit and fuzz tests:
// exactly the bytes a test needs, with lies where a test wants them.

type synthNote struct {
	name string
	typ  uint32
	desc []byte
}

type synthLoad struct {
	vaddr  uint64
	flags  uint32
	data   []byte // the bytes in the core (p_filesz)
	memsz  uint64 // 0: len(data)
	filesz uint64 // 0: len(data); set to lie
}

type synthCore struct {
	notes []synthNote
	loads []synthLoad
}

var le = binary.LittleEndian

// encodeNotes lays notes out as a PT_NOTE segment (4-byte alignment).
func encodeNotes(notes []synthNote) []byte {
	var b []byte
	for _, n := range notes {
		name := []byte(n.name)
		if len(name) > 0 {
			name = append(name, 0)
		}
		b = le.AppendUint32(b, uint32(len(name)))
		b = le.AppendUint32(b, uint32(len(n.desc)))
		b = le.AppendUint32(b, n.typ)
		b = append(b, name...)
		b = pad4(b)
		b = append(b, n.desc...)
		b = pad4(b)
	}
	return b
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// bytes returns the core file.
func (s synthCore) bytes() []byte {
	notes := encodeNotes(s.notes)
	phnum := 1 + len(s.loads)
	b := make([]byte, elfHeaderSize+56*phnum)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1
	le.PutUint16(b[16:], etCore)
	le.PutUint16(b[18:], emX86_64)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], elfHeaderSize)
	le.PutUint16(b[52:], elfHeaderSize)
	le.PutUint16(b[54:], 56)
	le.PutUint16(b[56:], uint16(phnum))
	ph := func(i int, typ, flags uint32, off, vaddr, filesz, memsz, align uint64) {
		p := b[elfHeaderSize+56*i:]
		le.PutUint32(p[0:], typ)
		le.PutUint32(p[4:], flags)
		le.PutUint64(p[8:], off)
		le.PutUint64(p[16:], vaddr)
		le.PutUint64(p[32:], filesz)
		le.PutUint64(p[40:], memsz)
		le.PutUint64(p[48:], align)
	}
	off := uint64(len(b))
	ph(0, ptNote, 0, off, 0, uint64(len(notes)), 0, 4)
	body := append([]byte(nil), notes...)
	off += uint64(len(notes))
	for i, l := range s.loads {
		memsz, filesz := l.memsz, l.filesz
		if memsz == 0 {
			memsz = uint64(len(l.data))
		}
		if filesz == 0 {
			filesz = uint64(len(l.data))
		}
		ph(1+i, ptLoad, l.flags, off, l.vaddr, filesz, memsz, 0x1000)
		body = append(body, l.data...)
		off += uint64(len(l.data))
	}
	return append(b, body...)
}

// prstatusDesc is an NT_PRSTATUS descriptor for thread tid with the given
// general registers (by user_regs_struct word index) set.
func prstatusDesc(tid int32, cursig int16, regs map[int]uint64) []byte {
	d := make([]byte, prstatusSize)
	le.PutUint32(d[0:], uint32(cursig))
	le.PutUint16(d[12:], uint16(cursig))
	le.PutUint64(d[16:], 0x4000)      // sigpend
	le.PutUint64(d[24:], 0x8000)      // sighold
	le.PutUint32(d[32:], uint32(tid)) // pr_pid
	le.PutUint32(d[36:], 1)
	le.PutUint64(d[48:], 3)      // utime sec
	le.PutUint64(d[56:], 250000) // utime usec
	for i, v := range regs {
		le.PutUint64(d[prstatusRegOffset+8*i:], v)
	}
	le.PutUint32(d[prstatusRegOffset+prstatusRegSize:], 1)
	return d
}

func prpsinfoDesc(pid int32, name, args string) []byte {
	d := make([]byte, prpsinfoSize)
	d[1] = 'R'
	le.PutUint32(d[24:], uint32(pid))
	copy(d[40:56], name)
	copy(d[56:136], args)
	return d
}

func siginfoDesc(sig, code int32, addr uint64) []byte {
	d := make([]byte, siginfoSize)
	le.PutUint32(d[0:], uint32(sig))
	le.PutUint32(d[8:], uint32(code))
	le.PutUint64(d[16:], addr)
	return d
}

func auxvDesc(pairs ...uint64) []byte {
	var d []byte
	for _, v := range pairs {
		d = le.AppendUint64(d, v)
	}
	return le.AppendUint64(le.AppendUint64(d, AT_NULL), 0)
}

func fileDesc(pageSize uint64, entries []FileMapping) []byte {
	d := le.AppendUint64(nil, uint64(len(entries)))
	d = le.AppendUint64(d, pageSize)
	for _, e := range entries {
		d = le.AppendUint64(d, e.Start)
		d = le.AppendUint64(d, e.End)
		d = le.AppendUint64(d, e.Offset/pageSize)
	}
	for _, e := range entries {
		d = append(append(d, e.Path...), 0)
	}
	return d
}

// xstateDesc is an XSAVE area with XCR0 = x87|SSE|AVX and xmm/ymm register
// n set to bytes of value v.
func xstateDesc(n int, v byte) []byte {
	d := make([]byte, 1088)
	le.PutUint64(d[464:], 7) // XCR0 in the software-reserved bytes
	le.PutUint64(d[512:], 7) // XSTATE_BV
	for i := 0; i < 16; i++ {
		d[160+16*n+i] = v
		d[576+16*n+i] = v + 1
	}
	return d
}
