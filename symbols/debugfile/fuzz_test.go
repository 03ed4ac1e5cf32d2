package debugfile

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/ulikunitz/xz"
)

func FuzzParseDebugLink(f *testing.F) {
	f.Add([]byte("prog.debug\x00\x00\x12\x34\x56\x78"))
	f.Add([]byte("a\x00\x00\x00\x01\x02\x03\x04"))
	f.Add([]byte("../../etc/passwd\x00\x00\x00\x00\x01\x02\x03\x04"))
	f.Add([]byte("noterm"))
	f.Fuzz(func(t *testing.T, data []byte) {
		name, _, err := ParseDebugLink(data, binary.LittleEndian)
		if err == nil && (name == "" || bytes.ContainsAny([]byte(name), "/\x00")) {
			t.Fatalf("accepted unsafe name %q", name)
		}
	})
}

func FuzzParseNotes(f *testing.F) {
	note := func(name string, typ uint32, desc []byte, align int) []byte {
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, [3]uint32{uint32(len(name)), uint32(len(desc)), typ})
		b.WriteString(name)
		for b.Len()%align != 0 {
			b.WriteByte(0)
		}
		b.Write(desc)
		for b.Len()%align != 0 {
			b.WriteByte(0)
		}
		return b.Bytes()
	}
	id := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	f.Add(note("GNU\x00", 3, id, 4), uint8(4))
	f.Add(append(note("GNU\x00", 5, make([]byte, 16), 8), note("GNU\x00", 3, id[:8], 8)...), uint8(8))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0}, uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, align uint8) {
		a := 4
		if align%2 == 1 {
			a = 8
		}
		got, err := parseNotes(data, binary.LittleEndian, a)
		if err == nil && got != nil && (len(got) == 0 || len(got) > len(data)) {
			t.Fatalf("build-id of %d bytes from %d bytes of notes", len(got), len(data))
		}
	})
}

// FuzzDecodeMiniDebugInfo: arbitrary bytes as an xz-wrapped ELF file.
// Seeds are real streams: one from the xz tool (through a Fedora-style
// MiniDebugInfo section of a test program, when the tools are present) and
// one from the Go xz writer. Inputs are large; use -fuzzminimizetime=2s.
func FuzzDecodeMiniDebugInfo(f *testing.F) {
	if bin, err := testprog.BuildE(testprog.Spec{Sources: []string{"sym_plt.c"}, Name: "sym_dbg"}); err == nil {
		data, _ := os.ReadFile(bin)
		var buf bytes.Buffer
		if w, err := xz.NewWriter(&buf); err == nil {
			w.Write(data)
			w.Close()
			f.Add(buf.Bytes())
		}
	}
	if seed, err := os.ReadFile("testdata/minidebuginfo.xz"); err == nil {
		f.Add(seed)
	}
	f.Add([]byte("\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := DecodeMiniDebugInfo(data, 1<<20)
		if err == nil {
			ef.Symbols() // must not panic either
		}
	})
}
