package symbols

import (
	"os"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// FuzzOpenLookup feeds ELF images through OpenBytes and every kind of
// lookup: nothing may panic or hang.
func FuzzOpenLookup(f *testing.F) {
	for _, flags := range [][]string{{"-O2", "-gdwarf-5"}, {"-O0", "-gdwarf-4"}} {
		path, err := testprog.BuildE(testprog.Spec{Sources: []string{"dw_inline.c"}, Flags: flags, Name: "fuzz_seed"})
		if err != nil {
			f.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint64(0x1150))
	}
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		b, err := OpenBytes("fuzz", data, &Options{NoSearch: true})
		if err != nil {
			return
		}
		defer b.Close()
		for i := uint64(0); i < 64; i += 4 {
			b.Lookup(addr + i)
		}
		b.LookupFunction("main")
		b.LookupVariable("dw_global_counter")
		b.LookupLine("dw_inline.c", 30)
		b.LineAt(addr)
		b.LineSequence(addr)
		b.Scopes(addr)
		b.UnwindSections()
	})
}
