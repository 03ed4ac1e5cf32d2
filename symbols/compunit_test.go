package symbols

import (
	"debug/dwarf"
	"debug/elf"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestCompileUnitMatchesDebugDwarf asks CompileUnit for the low pc of every
// compile unit of test programs (DWARF 4 and 5, C and C++) and compares the
// unit it names with what the standard library's reader says of the unit
// whose ranges hold that pc.
func TestCompileUnitMatchesDebugDwarf(t *testing.T) {
	paths := []string{
		testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2"}, Name: "stk-threads-O2"}),
		testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2", "-gdwarf-4"}, Name: "stk-threads-O2-dw4"}),
		testprog.Build(t, testprog.Spec{Sources: []string{"stk_cxx.cc"}, Flags: []string{"-O2"}, Name: "stk-cxx-O2"}),
	}
	for _, p := range paths {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.DWARF()
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		rd := d.Reader()
		for {
			e, err := rd.Next()
			if err != nil || e == nil {
				break
			}
			if e.Tag != dwarf.TagCompileUnit {
				rd.SkipChildren()
				continue
			}
			rs, err := d.Ranges(e)
			rd.SkipChildren()
			if err != nil || len(rs) == 0 {
				continue
			}
			name, _ := e.Val(dwarf.AttrName).(string)
			compDir, _ := e.Val(dwarf.AttrCompDir).(string)
			for _, r := range rs {
				u, ok := b.CompileUnit(r[0])
				if !ok {
					t.Errorf("%s: no unit at %#x (%s)", p, r[0], name)
					continue
				}
				if u.Name != name || u.CompDir != compDir || u.Offset > uint64(e.Offset) {
					t.Errorf("%s at %#x: %+v, debug/dwarf says %q in %q at %#x", p, r[0], u, name, compDir, e.Offset)
				}
				checked++
			}
		}
		if _, ok := b.CompileUnit(1); ok {
			t.Errorf("%s: a unit at address 1", p)
		}
		b.Close()
		f.Close()
		if checked == 0 {
			t.Errorf("%s: no unit checked", p)
		}
	}
}
