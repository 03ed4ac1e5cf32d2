package core

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/target"
)

// The fuzz targets feed every note parser and Open itself arbitrary bytes.
// Besides "no panic, no hang", each checks the invariants its callers rely on.

func FuzzParseNotes(f *testing.F) {
	f.Add(encodeNotes([]synthNote{{"CORE", NT_PRSTATUS, make([]byte, 16)}, {"LINUX", NT_X86_XSTATE, []byte{1}}}), uint64(4))
	f.Add(encodeNotes([]synthNote{{"", 0, nil}}), uint64(8))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0}, uint64(4))
	f.Fuzz(func(t *testing.T, data []byte, align uint64) {
		notes, err := ParseNotes(data, 1000, align)
		if len(notes) > len(data)/12 {
			t.Fatalf("%d notes from %d bytes", len(notes), len(data))
		}
		for _, n := range notes {
			if n.Offset < 1000 || n.Offset-1000 > int64(len(data)) {
				t.Fatalf("note offset %d outside the data", n.Offset)
			}
		}
		var ne *NoteError
		if err != nil && !errors.As(err, &ne) {
			t.Fatalf("error %T", err)
		}
	})
}

func FuzzParsePRStatus(f *testing.F) {
	f.Add(prstatusDesc(1, 11, map[int]uint64{16: 1}))
	f.Add(make([]byte, prstatusRegOffset+prstatusRegSize))
	f.Fuzz(func(t *testing.T, desc []byte) {
		s, err := ParsePRStatus(desc)
		if (err == nil) != (len(desc) >= prstatusRegOffset+prstatusRegSize) {
			t.Fatalf("%d bytes: %v", len(desc), err)
		}
		if err == nil && len(s.Registers) != prstatusRegSize {
			t.Fatalf("%d register bytes", len(s.Registers))
		}
	})
}

func FuzzParsePRPSInfo(f *testing.F) {
	f.Add(prpsinfoDesc(7, "name", "args"))
	f.Fuzz(func(t *testing.T, desc []byte) {
		p, err := ParsePRPSInfo(desc)
		if err == nil && (len(p.Name) > 16 || len(p.Args) > 80) {
			t.Fatalf("%+v", p)
		}
	})
}

func FuzzParseSigInfo(f *testing.F) {
	f.Add(siginfoDesc(11, 1, 8))
	f.Add(siginfoDesc(6, -6, 0))
	f.Fuzz(func(t *testing.T, desc []byte) {
		s, err := ParseSigInfo(desc)
		if err == nil && s.IsFault() && s.SenderPID != 0 {
			t.Fatalf("a fault with a sender: %+v", s)
		}
	})
}

func FuzzParseAuxv(f *testing.F) {
	f.Add(auxvDesc(AT_ENTRY, 1, AT_PHDR, 2))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, desc []byte) {
		a, err := ParseAuxv(desc)
		if len(a) > len(desc)/16 {
			t.Fatalf("%d entries from %d bytes", len(a), len(desc))
		}
		for _, e := range a {
			if e.Tag == AT_NULL {
				t.Fatal("AT_NULL in the result")
			}
		}
		_ = err
	})
}

func FuzzParseFileNote(f *testing.F) {
	f.Add(fileDesc(4096, []FileMapping{{Start: 0x1000, End: 0x2000, Offset: 0x3000, Path: "/a"}}))
	f.Add(fileDesc(1, []FileMapping{{Start: 0, End: 0, Offset: 0, Path: ""}}))
	f.Fuzz(func(t *testing.T, desc []byte) {
		m, err := ParseFileNote(desc)
		if len(desc) >= 8 && uint64(len(m)) > le.Uint64(desc) {
			t.Fatalf("%d entries, the note declares %d", len(m), le.Uint64(desc))
		}
		for _, e := range m {
			if e.End < e.Start {
				t.Fatalf("entry %+v ends before it starts", e)
			}
		}
		_ = err
	})
}

// FuzzOpen opens mutated synthetic cores (with a mapped file that exists)
// and reads through everything: no panic, every read returns right-length
// data or a typed error.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	file := filepath.Join(dir, "lib")
	if err := os.WriteFile(file, bytes.Repeat([]byte{0x90}, 0x3000), 0o644); err != nil {
		f.Fatal(err)
	}
	base := synthCore{
		notes: []synthNote{
			{"CORE", NT_PRPSINFO, prpsinfoDesc(9, "fz", "")},
			{"CORE", NT_PRSTATUS, prstatusDesc(9, 6, map[int]uint64{16: 0x401000})},
			{"LINUX", NT_X86_XSTATE, xstateDesc(0, 1)},
			{"CORE", NT_SIGINFO, siginfoDesc(6, -6, 0)},
			{"CORE", NT_AUXV, auxvDesc(AT_ENTRY, 0x401000)},
			{"CORE", NT_FILE, fileDesc(4096, []FileMapping{{Start: 0x400000, End: 0x402000, Offset: 0, Path: file}})},
		},
		loads: []synthLoad{
			{vaddr: 0x400000, flags: pfR | pfX, data: []byte("\x7fELF"), memsz: 0x2000},
			{vaddr: 0x7f0000, flags: pfR | pfW, data: bytes.Repeat([]byte{7}, 64)},
		},
	}
	f.Add(base.bytes())
	raw := base.bytes()
	f.Add(raw[:len(raw)-30])
	f.Add(raw[:300])
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "core")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		tg, err := Open(path, Options{})
		if err != nil {
			var fe *FormatError
			var ne *NoteError
			if !errors.As(err, &fe) && !errors.As(err, &ne) {
				t.Fatalf("error %T: %v", err, err)
			}
			return
		}
		defer tg.Close()
		c := Of(tg)
		_ = c.Problems()
		m, _ := c.Process().MemoryMap()
		buf := make([]byte, 64)
		for _, r := range m {
			for _, a := range []uint64{r.Addr, r.Addr + r.Size/2, r.End() - 1} {
				n, err := c.Process().ReadMemory(a, buf)
				if n < 0 || n > len(buf) || (err == nil) != (n == len(buf)) {
					t.Fatalf("read 0x%x: %d %v", a, n, err)
				}
				var me *target.MemoryError
				if err != nil && !errors.As(err, &me) {
					t.Fatalf("read 0x%x: %T %v", a, err, err)
				}
			}
		}
		for _, th := range c.Process().Children() {
			if r, err := th.Registers(); err == nil {
				_ = r.PC()
			}
		}
	})
}
