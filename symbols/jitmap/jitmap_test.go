package jitmap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

func TestPerfMap(t *testing.T) {
	data := []byte("7f0000001000 40 LazyCompile:*fib /tmp/x.js:1:13\n" +
		"0x7f0000002000 0x10 Builtin:ArgumentsAdaptorTrampoline\n" +
		"\n" +
		"7f0000001010 8 newer code over older\r\n" +
		"7f0000003000 0 empty\n" +
		"7f0000004000 10 half-writ") // no newline: being written
	tab, err := ParsePerfMap(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0x7f0000001000, "LazyCompile:*fib /tmp/x.js:1:13"},
		{0x7f000000103f, "LazyCompile:*fib /tmp/x.js:1:13"},
		{0x7f0000001012, "newer code over older"},
		{0x7f0000002008, "Builtin:ArgumentsAdaptorTrampoline"},
		{0x7f0000001040, ""},
		{0x7f0000003000, ""},
		{0x7f0000004000, ""},
	} {
		s, ok := tab.Lookup(tc.addr)
		if s.Name != tc.want || ok != (tc.want != "") {
			t.Errorf("Lookup(%#x) = %q, %v; want %q", tc.addr, s.Name, ok, tc.want)
		}
	}
}

func TestPerfMapErrors(t *testing.T) {
	for _, in := range []string{"zz 10 f\n", "1000\n", "1000 1g f\n", "ffffffffffffffff 2 wrap\n", "12345678901234567 1 long\n"} {
		tab, err := ParsePerfMap([]byte("1000 10 ok\n" + in))
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Offset != 2 {
			t.Errorf("%q: err %v, want a FormatError at line 2", in, err)
		}
		if s, _ := tab.Lookup(0x1004); s.Name != "ok" {
			t.Errorf("%q: lines before the damage lost", in)
		}
	}
}

// jitdump builds a jitdump file the way a runtime writes one.
type jitdump struct{ bytes.Buffer }

func newJitdump() *jitdump {
	d := &jitdump{}
	for _, v := range []uint32{jitMagic, 1, 40, 62, 0, 1234} {
		binary.Write(d, binary.LittleEndian, v)
	}
	binary.Write(d, binary.LittleEndian, [2]uint64{})
	return d
}

func (d *jitdump) record(id uint32, body []byte) {
	binary.Write(d, binary.LittleEndian, [2]uint32{id, uint32(recHeader + len(body))})
	binary.Write(d, binary.LittleEndian, uint64(7))
	d.Write(body)
}

func (d *jitdump) load(addr, size, index uint64, name string) {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [2]uint32{1234, 1235})
	binary.Write(&b, binary.LittleEndian, [4]uint64{addr, addr, size, index})
	b.WriteString(name)
	b.WriteByte(0)
	b.Write(make([]byte, size)) // the code
	d.record(recCodeLoad, b.Bytes())
}

func (d *jitdump) move(oldAddr, newAddr, size, index uint64) {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [2]uint32{1234, 1235})
	binary.Write(&b, binary.LittleEndian, [5]uint64{newAddr, oldAddr, newAddr, size, index})
	d.record(recCodeMove, b.Bytes())
}

func TestJitdump(t *testing.T) {
	d := newJitdump()
	d.load(0x10000, 0x20, 1, "TRACE_1::fib.lua:3")
	d.record(2, make([]byte, 24)) // debug info: skipped
	d.load(0x20000, 0x30, 2, "moved")
	d.move(0x20000, 0x30000, 0x30, 2)
	d.Write([]byte{0, 0, 0, 0, 0xff, 0, 0, 0}) // a partial last record
	tab, err := ParseJitdump(d.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := tab.Lookup(0x1001f); !ok || s.Name != "TRACE_1::fib.lua:3" {
		t.Errorf("load: %+v %v", s, ok)
	}
	if s, ok := tab.Lookup(0x30010); !ok || s.Name != "moved" {
		t.Errorf("move: %+v %v", s, ok)
	}
	if _, ok := tab.Lookup(0x10020); ok {
		t.Error("found past the end of a load")
	}
}

func TestJitdumpErrors(t *testing.T) {
	if _, err := ParseJitdump([]byte("JiTD")); err == nil {
		t.Error("short header accepted")
	}
	bad := newJitdump().Bytes()
	bad[0] = 'x'
	if _, err := ParseJitdump(bad); err == nil {
		t.Error("bad magic accepted")
	}
	d := newJitdump()
	d.load(0x10000, 0x20, 1, "good")
	d.record(recCodeLoad, []byte("short"))
	tab, err := ParseJitdump(d.Bytes())
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Offset != int64(d.Len()-recHeader-5) {
		t.Errorf("err %v, want a FormatError at the short record", err)
	}
	if tab.Len() != 1 {
		t.Errorf("records before the damage: %d, want 1", tab.Len())
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("7f0000001000 40 LazyCompile:*fib /tmp/x.js:1:13\n0x10 0x10 x\n"))
	d := newJitdump()
	d.load(0x10000, 0x20, 1, "f")
	d.move(0x10000, 0x30000, 0x20, 1)
	f.Add(d.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) (*Table, error){ParsePerfMap, ParseJitdump} {
			tab, _ := parse(data)
			for _, s := range tab.syms {
				if got, ok := tab.Lookup(s.Start); !ok || got.Start > s.Start || got.End() <= s.Start {
					t.Fatalf("Lookup(%#x) = %+v, %v", s.Start, got, ok)
				}
			}
		}
	})
}

// BenchmarkParsePerfMap parses a 100 000-line perf map (what a busy node
// writes with --perf-basic-prof) and looks up every symbol once.
func BenchmarkParsePerfMap(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&buf, "%x %x LazyCompile:*fn%d /srv/app/lib/module%d.js:%d:%d\n", 0x7f0000000000+uint64(i)*0x100, 0xf0, i, i%97, i%500, i%40)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		tab, err := ParsePerfMap(data)
		if err != nil || tab.Len() != 100000 {
			b.Fatal(tab.Len(), err)
		}
		for i := 0; i < 100000; i++ {
			if _, ok := tab.Lookup(0x7f0000000000 + uint64(i)*0x100 + 8); !ok {
				b.Fatal("lookup")
			}
		}
	}
}
