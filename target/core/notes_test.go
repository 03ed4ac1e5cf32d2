package core

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseNotes(t *testing.T) {
	good := encodeNotes([]synthNote{
		{"CORE", NT_PRSTATUS, []byte{1, 2, 3}},
		{"LINUX", NT_X86_XSTATE, []byte{4, 5, 6, 7, 8}},
		{"", 99, nil},
	})
	notes, err := ParseNotes(good, 100, 4)
	if err != nil || len(notes) != 3 {
		t.Fatalf("%d notes, %v", len(notes), err)
	}
	if notes[0].Name != "CORE" || notes[0].Type != NT_PRSTATUS || string(notes[0].Desc) != "\x01\x02\x03" || notes[0].Offset != 100 {
		t.Errorf("note 0: %+v", notes[0])
	}
	if notes[1].Name != "LINUX" || len(notes[1].Desc) != 5 || notes[1].Offset != 100+12+8+4 {
		t.Errorf("note 1: %+v", notes[1])
	}
	if notes[2].Name != "" || notes[2].Type != 99 {
		t.Errorf("note 2: %+v", notes[2])
	}

	lie := func(edit func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		edit(b)
		return b
	}
	bad := []struct {
		name  string
		data  []byte
		notes int    // notes before the bad one
		msg   string // in the error
	}{
		{"huge descsz", lie(func(b []byte) { le.PutUint32(b[4:], 0xfffffff0) }), 0, "descriptor size"},
		{"huge namesz", lie(func(b []byte) { le.PutUint32(b[0:], 0x7fffffff) }), 0, "name size"},
		{"name without NUL", lie(func(b []byte) { b[12+4] = 'X' }), 0, "NUL"},
		{"second descsz lies", lie(func(b []byte) { le.PutUint32(b[24+4:], 1000) }), 1, "descriptor size"},
		{"trailing bytes", append(append([]byte(nil), good...), 1, 2, 3), 3, "trailing"},
		{"cut in a descriptor", good[:len(good)-20], 1, "descriptor size"},
	}
	for _, tc := range bad {
		notes, err := ParseNotes(tc.data, 0, 4)
		var ne *NoteError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want a NoteError about %q", tc.name, err, tc.msg)
		}
		if len(notes) != tc.notes {
			t.Errorf("%s: %d notes before the error, want %d", tc.name, len(notes), tc.notes)
		}
	}

	// 8-byte alignment (PT_NOTE with p_align 8).
	var b8 []byte
	b8 = le.AppendUint32(b8, 4)
	b8 = le.AppendUint32(b8, 3)
	b8 = le.AppendUint32(b8, 5)
	b8 = append(b8, "GNU\x00"...)
	b8 = append(b8, 7, 8, 9, 0, 0, 0, 0, 0)
	b8 = append(b8, b8...) // two notes: the second starts 8-aligned at 24
	notes, err = ParseNotes(b8, 0, 8)
	if err != nil || len(notes) != 2 || string(notes[1].Desc) != "\x07\x08\x09" || notes[1].Offset != 24 {
		t.Errorf("align 8: %+v %v", notes, err)
	}
}

func TestParsePRStatus(t *testing.T) {
	s, err := ParsePRStatus(prstatusDesc(4242, 11, map[int]uint64{16: 0x401000, 19: 0x7ffe0000}))
	if err != nil {
		t.Fatal(err)
	}
	if s.TID != 4242 || s.CurrentSignal != 11 || s.Signal != 11 || s.Pending != 0x4000 || s.Blocked != 0x8000 || s.PPID != 1 || !s.FPValid {
		t.Errorf("%+v", s)
	}
	if s.UserTime != 3*time.Second+250*time.Millisecond {
		t.Errorf("utime %v", s.UserTime)
	}
	if le.Uint64(s.Registers[16*8:]) != 0x401000 || le.Uint64(s.Registers[19*8:]) != 0x7ffe0000 || len(s.Registers) != 216 {
		t.Errorf("registers %x", s.Registers)
	}
	if _, err := ParsePRStatus(make([]byte, 300)); err == nil {
		t.Error("a 300-byte NT_PRSTATUS was accepted")
	}
}

func TestParsePRPSInfo(t *testing.T) {
	p, err := ParsePRPSInfo(prpsinfoDesc(77, "crashy", "./crashy --flag "))
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != 77 || p.Name != "crashy" || p.Args != "./crashy --flag" || p.State != 'R' {
		t.Errorf("%+v", p)
	}
	// A name that fills all 16 bytes has no NUL.
	p, _ = ParsePRPSInfo(prpsinfoDesc(1, "0123456789abcdefXYZ", ""))
	if p.Name != "0123456789abcdef" {
		t.Errorf("name %q", p.Name)
	}
	if _, err := ParsePRPSInfo(make([]byte, 100)); err == nil {
		t.Error("a 100-byte NT_PRPSINFO was accepted")
	}
}

func TestParseSigInfo(t *testing.T) {
	s, err := ParseSigInfo(siginfoDesc(sigSEGV, 1, 0xdead))
	if err != nil || !s.IsFault() || s.Addr != 0xdead || s.SenderPID != 0 {
		t.Errorf("fault: %+v %v", s, err)
	}
	d := siginfoDesc(3, -6, 0)
	le.PutUint32(d[16:], 99)
	le.PutUint32(d[20:], 1000)
	s, err = ParseSigInfo(d)
	if err != nil || s.IsFault() || s.SenderPID != 99 || s.SenderUID != 1000 || s.Addr != 0 {
		t.Errorf("tkill: %+v %v", s, err)
	}
	// SIGSEGV sent with kill(2) is not a fault.
	s, _ = ParseSigInfo(siginfoDesc(sigSEGV, 0, 0))
	if s.IsFault() {
		t.Errorf("kill(SIGSEGV) counted as a fault")
	}
	if _, err := ParseSigInfo(make([]byte, 64)); err == nil {
		t.Error("a 64-byte NT_SIGINFO was accepted")
	}
}

func TestParseAuxv(t *testing.T) {
	a, err := ParseAuxv(auxvDesc(AT_PHDR, 0x400040, AT_ENTRY, 0x401000, AT_SYSINFO_EHDR, 0x7fff0000))
	if err != nil || len(a) != 3 {
		t.Fatalf("%v %v", a, err)
	}
	if v, ok := a.Lookup(AT_ENTRY); !ok || v != 0x401000 {
		t.Errorf("AT_ENTRY %x %v", v, ok)
	}
	if _, ok := a.Lookup(AT_BASE); ok {
		t.Error("AT_BASE found")
	}
	d := auxvDesc(AT_PHDR, 1)
	if a, err := ParseAuxv(d[:16]); err == nil || len(a) != 1 {
		t.Errorf("no AT_NULL: %v %v", a, err)
	}
	if a, err := ParseAuxv(d[:20]); err == nil || len(a) != 1 {
		t.Errorf("ragged: %v %v", a, err)
	}
}

func TestParseFileNote(t *testing.T) {
	entries := []FileMapping{
		{Start: 0x400000, End: 0x401000, Offset: 0, Path: "/bin/prog"},
		{Start: 0x401000, End: 0x403000, Offset: 0x1000, Path: "/lib/libc.so.6 (deleted)"},
	}
	for _, ps := range []uint64{4096, 1} { // kernel, gdb
		got, err := ParseFileNote(fileDesc(ps, entries))
		if err != nil || len(got) != 2 || got[0] != entries[0] || got[1] != entries[1] {
			t.Errorf("page size %d: %+v %v", ps, got, err)
		}
	}
	d := fileDesc(4096, entries)
	bad := []struct {
		name string
		edit func([]byte) []byte
		n    int
	}{
		{"count lies", func(b []byte) []byte { le.PutUint64(b, 1<<40); return b }, 0},
		{"page size 0", func(b []byte) []byte { le.PutUint64(b[8:], 0); return b }, 0},
		{"end before start", func(b []byte) []byte { le.PutUint64(b[16+24+8:], 0x1000); return b }, 1},
		{"offset overflows", func(b []byte) []byte { le.PutUint64(b[16+16:], 1<<60); return b }, 0},
		{"paths missing", func(b []byte) []byte { return b[:16+48+10] }, 1},
		{"short header", func(b []byte) []byte { return b[:8] }, 0},
	}
	for _, tc := range bad {
		got, err := ParseFileNote(tc.edit(append([]byte(nil), d...)))
		var ne *NoteError
		if !errors.As(err, &ne) || ne.Type != NT_FILE {
			t.Errorf("%s: error %v", tc.name, err)
		}
		if len(got) != tc.n {
			t.Errorf("%s: %d entries, want %d", tc.name, len(got), tc.n)
		}
	}
}
