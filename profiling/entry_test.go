package profiling

import (
	"os"
	"testing"

	"github.com/sondedbg/sonde/symbols"
)

// TestEntryIsSymbolStart: the unwinder's function start for a pc at the
// ELF entry point, answered from the header (isEntry) without reading the
// symbol table, is the start the ELF symbols give there, for the dynamic
// linker (whose _start is where an exec's first sample lies) and for a
// program; an address beside it is not taken for the entry.
func TestEntryIsSymbolStart(t *testing.T) {
	paths := []string{"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2", "/bin/true"}
	checked := 0
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		bin, err := symbols.Open(p, nil)
		if err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		entry := bin.ELF().Entry
		if !isEntry(bin, entry) || isEntry(bin, entry+1) || isEntry(bin, entry-1) {
			t.Errorf("%s: isEntry wrong around the entry %#x", p, entry)
		}
		tab, err := bin.Symbols()
		if err != nil {
			t.Fatalf("%s: symbols: %v", p, err)
		}
		if sym, off, ok := tab.Lookup(entry); ok {
			if off != 0 {
				t.Errorf("%s: entry %#x is %s+%#x, not a function start", p, entry, sym.Name, off)
			}
			checked++
		}
		bin.Close()
	}
	if checked == 0 {
		t.Skip("no file here has a symbol at its entry point (no ld.so symbols or debug file)")
	}
}
