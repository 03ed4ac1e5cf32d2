package snapshot

import (
	"os"
	"testing"
)

// TestFileMappedInsideAnother: `perf inject --jit` maps small files
// (jitted-PID-N.so, node's builtins) inside node's text mapping, which the
// recording's reader splits around them. The text before and after each
// inner file is node's with node's bias, and the inner file is its own
// module: one module spanning node's whole range hid the inner files, and
// clipping the later modules lost node's text beyond them.
func TestFileMappedInsideAnother(t *testing.T) {
	outer, err := os.Executable() // any ELF file: the test binary
	if err != nil {
		t.Fatal(err)
	}
	inner := "/bin/true"
	if _, err := os.Stat(inner); err != nil {
		t.Skip("SKIP (machine): no /bin/true")
	}
	const base = 0x10000000
	maps := []Mapping{
		{Start: base, End: base + 0x10000, Offset: 0, Path: outer, Name: outer, Exec: true},
		{Start: base + 0x10000, End: base + 0x11000, Offset: 0, Path: inner, Name: inner, Exec: true},
		{Start: base + 0x11000, End: base + 0x20000, Offset: 0x11000, Path: outer, Name: outer, Exec: true},
		{Start: base + 0x20000, End: base + 0x21000, Offset: 0, Path: inner, Name: inner, Exec: true},
		{Start: base + 0x21000, End: base + 0x30000, Offset: 0x21000, Path: outer, Name: outer, Exec: true},
	}
	p, err := New(maps, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mods := p.Modules()
	for _, pc := range []uint64{base + 0x100, base + 0x10100, base + 0x11100, base + 0x1ff00, base + 0x20100, base + 0x2f000} {
		var name string
		var bias uint64
		for _, m := range mods {
			if pc >= m.Start && pc < m.End {
				if name != "" {
					t.Errorf("%#x in two modules: %s and %s", pc, name, m.Name)
				}
				name, bias = m.Name, m.Bias
			}
		}
		want := outer
		if off := pc - base; off >= 0x10000 && off < 0x11000 || off >= 0x20000 && off < 0x21000 {
			want = inner
		}
		if name != want {
			t.Errorf("%#x: module %q, want %q", pc, name, want)
		} else if name == outer && bias != mods[0].Bias {
			t.Errorf("%#x: bias %#x, want the first piece's %#x", pc, bias, mods[0].Bias)
		}
	}
}
