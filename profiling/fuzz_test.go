package profiling

import (
	"strings"
	"testing"
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
