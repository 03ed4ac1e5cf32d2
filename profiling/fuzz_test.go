package profiling

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/pcache"
)

func FuzzReadKallsyms(f *testing.F) {
	f.Add("ffffffff81000000 T _text\nffffffff81000040 t early_idt\nffffffff81000100 W weak_fn [mod]\n0000000000000000 A zero\n")
	f.Add("ffffffff81000100 T b\nffffffff81000000 T a\n")
	f.Fuzz(func(t *testing.T, text string) {
		k, err := ReadKallsyms(strings.NewReader(text))
		if err != nil {
			return
		}
		for i := 1; i < len(k.addrs); i++ {
			if k.addrs[i] < k.addrs[i-1] {
				t.Fatalf("unsorted at %d", i)
			}
		}
		if len(k.addrs) > 0 && k.Lookup(k.addrs[0]) == "" {
			t.Fatalf("the first symbol does not name its own address")
		}
		k.Lookup(0)
		k.Lookup(^uint64(0))
	})
}

// FuzzNamesSection feeds arbitrary bytes to the persisted names' decoder,
// which must refuse what does not add up rather than panic or allocate by a
// length it read; what it accepts must encode back to the same bytes.
func FuzzNamesSection(f *testing.F) {
	good := &namesClient{module: "m", names: map[uint64][]Frame{
		42: {{Function: "mix", File: "a.c", Line: 3, Column: 5, StartLine: 2, Inlined: true, Offset: 0x1f, HasOffset: true}, {Function: "leaf", File: "a.c", Line: 9, Offset: 0x1f, HasOffset: true}},
		7:  {{}},
	}}
	_, enc, _ := good.Size(nil)
	f.Add(enc.([]byte))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &namesClient{module: "m"}
		if err := c.Resurrect(nil, []pcache.Section{{Data: data}}); err != nil {
			return
		}
		_, again, _ := c.Size(nil)
		if !bytes.Equal(again.([]byte), data) {
			t.Fatalf("accepted a section that does not encode back to itself")
		}
	})
}
