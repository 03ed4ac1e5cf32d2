package arch

import "testing"

func TestAMD64Table(t *testing.T) {
	a := AMD64
	if a.GeneralSize != 27*8 {
		t.Fatalf("user_regs_struct is 216 bytes, table says %d", a.GeneralSize)
	}
	for _, c := range []struct {
		name  string
		dwarf int
		off   int
	}{{"rip", 16, 128}, {"rsp", 7, 152}, {"rax", 0, 80}, {"r15", 15, 0}, {"fs_base", 58, 168}} {
		r := a.ByName(c.name)
		if r == nil || r.DWARF != c.dwarf || r.Offset != c.off {
			t.Errorf("%s: got %+v", c.name, r)
		}
		if a.ByDWARF(c.dwarf) != r {
			t.Errorf("ByDWARF(%d) != ByName(%s)", c.dwarf, c.name)
		}
	}
	seen := map[string]bool{}
	for _, r := range a.Registers {
		if seen[r.Name] {
			t.Errorf("duplicate register %s", r.Name)
		}
		seen[r.Name] = true
		limit := a.GeneralSize
		if r.Set == SetXState {
			limit = XSaveHi16ZMM + 16*64
		}
		if r.Offset < 0 || r.Offset+r.Size > limit {
			t.Errorf("%s lies outside its set", r.Name)
		}
	}
	if a.ByName("RIP") == nil {
		t.Error("lookup must be case-insensitive")
	}
}
