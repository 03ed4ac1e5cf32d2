package symbols

import (
	"debug/dwarf"
	"debug/elf"
	"path/filepath"
	"testing"
)

// TestCloneNamesOwnLinkageName checks the out-of-line copies of one source
// function that GCC's LTO gives linkage names of their own
// (ucs1lib_fastsearch.constprop.0 and ucs1lib_fastsearch.part.0.lto_priv.0
// in Debian 12's python3.11, both with DW_AT_abstract_origin to one abstract
// instance): each is named by its own linkage name, as gdb and addr2line
// name it. Sharing the origin's name gave every copy the name of the first
// one read. The copies are found in the DWARF, not assumed: any version of
// the package has some.
func TestCloneNamesOwnLinkageName(t *testing.T) {
	exe, err := filepath.EvalSymlinks("/usr/bin/python3") // Debian's, not a virtualenv's
	if err != nil {
		t.Skipf("no /usr/bin/python3 (apt-get install python3-dbg): %v", err)
	}
	b, err := Open(exe, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !b.HasDWARF() || b.debug == nil {
		t.Skipf("no debug information for %s (apt-get install python3-dbg)", exe)
	}
	dbg := b.debug.name
	ef, err := elf.Open(dbg)
	if err != nil {
		t.Skipf("debug file %q: %v (apt-get install python3-dbg)", dbg, err)
	}
	defer ef.Close()
	d, err := ef.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	// Concrete copies by abstract origin: their linkage names and entries.
	type copyOf struct {
		linkage string
		entry   uint64
	}
	byOrigin := map[dwarf.Offset][]copyOf{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagSubprogram {
			continue
		}
		origin, ok1 := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		linkage, ok2 := e.Val(dwarf.AttrLinkageName).(string)
		entry, ok3 := e.Val(dwarf.AttrLowpc).(uint64)
		if ok1 && ok2 && ok3 {
			byOrigin[origin] = append(byOrigin[origin], copyOf{linkage, entry})
		}
		if e.Children {
			r.SkipChildren()
		}
	}
	checked := 0
	for _, copies := range byOrigin {
		if len(copies) < 2 || copies[0].linkage == copies[1].linkage {
			continue
		}
		for _, c := range copies {
			fr, err := b.Lookup(c.entry)
			if err != nil || len(fr) == 0 {
				t.Errorf("%#x (%s): %v %v", c.entry, c.linkage, fr, err)
				continue
			}
			if got := fr[len(fr)-1]; got.Function != c.linkage {
				t.Errorf("%#x: named %q, want its own linkage name %q", c.entry, got.Function, c.linkage)
			}
		}
		if checked++; checked >= 50 {
			break
		}
	}
	if checked == 0 {
		t.Skipf("%s has no two copies of a function with their own linkage names", dbg)
	}
	t.Logf("%d functions with several named copies checked", checked)
}
