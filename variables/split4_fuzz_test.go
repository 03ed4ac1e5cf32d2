package variables

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// FuzzGNUSplit4 opens the split unit of a real GNU split DWARF 4 build with
// its .dwo sections changed by the fuzzer (abbreviations, DIEs, location
// lists): making the child Reader and every query on it must end with a
// result or an error.
func FuzzGNUSplit4(f *testing.F) {
	exe, err := testprog.BuildE(testprog.Spec{Sources: []string{"split4_vars.c"},
		Flags: []string{"-O2", "-gdwarf-4", "-gsplit-dwarf"}, Name: "split4_fuzz"})
	if err != nil {
		f.Skip(err)
	}
	b, err := symbols.Open(exe, nil)
	if err != nil {
		f.Fatal(err)
	}
	units, err := b.SplitUnits()
	if err != nil || len(units) != 1 {
		f.Fatalf("split units: %d, %v", len(units), err)
	}
	root, err := New(b)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), uint32(0), []byte{0xff})
	f.Add(uint8(1), uint32(3), []byte{0x81, 0x3e})
	f.Add(uint8(2), uint32(6), []byte{0x03, 0xff, 0xff})
	f.Add(uint8(2), uint32(0), []byte{0x04, 0xff, 0xff, 0xff, 0xff})
	sections := []string{".debug_info", ".debug_abbrev", ".debug_loc"}
	f.Fuzz(func(t *testing.T, which uint8, at uint32, patch []byte) {
		su := units[0]
		su.Sections = map[string][]byte{}
		for k, v := range units[0].Sections {
			su.Sections[k] = v
		}
		name := sections[int(which)%len(sections)]
		s := append([]byte(nil), su.Sections[name]...)
		if len(s) > 0 {
			copy(s[int(at)%len(s):], patch)
		}
		su.Sections[name] = s
		c, err := root.newChild(su)
		if err != nil {
			return
		}
		for _, rg := range su.Ranges {
			for pc := rg[0]; pc < rg[1]; pc += 7 {
				scopes, _ := c.ScopesAt(pc)
				for _, sc := range scopes {
					for _, v := range sc.Vars {
						_ = v.Type.String()
						_, _ = c.Read(v, &memFrame{base: 0x7000, mem: make([]byte, 64)})
					}
				}
			}
		}
		_, _ = c.Globals("g_shape")
	})
}
