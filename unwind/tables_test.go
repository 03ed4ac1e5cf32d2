package unwind

import (
	"debug/elf"
	"os"
	"reflect"
	"testing"
)

// TestPreparedTablesMatchOnDemand: the rows Tables.Prepare decodes ahead
// are the rows a walk decodes on demand, for the C library's functions
// (their entry, middle and last byte, and pcs with no FDE), whether the
// tables are a module's own or shared by two modules mapping the image at
// different addresses (SetTables).
func TestPreparedTablesMatchOnDemand(t *testing.T) {
	const path = "/lib/x86_64-linux-gnu/libc.so.6"
	f, err := elf.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			t.Skipf("no %s", path)
		}
		t.Fatal(err)
	}
	defer f.Close()
	src, err := ReadSources(f)
	if err != nil || len(src.EHFrame.Data) == 0 {
		t.Fatalf("%s: no .eh_frame: %v", path, err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Size > 0 {
			pcs = append(pcs, s.Value, s.Value+s.Size/2, s.Value+s.Size-1)
		}
	}
	if len(pcs) < 300 {
		t.Fatalf("%d function pcs in %s", len(pcs), path)
	}
	pcs = append(pcs[:600], 0, 1, ^uint64(0)>>1) // and pcs outside every FDE
	shared := NewTables(src)
	shared.Prepare(pcs...)
	const bias1, bias2 = 0x7f0000000000, 0x7f1234560000
	m1 := &Module{Name: "libc", Bias: bias1}
	m1.SetTables(shared)
	m2 := &Module{Name: "libc", Bias: bias2}
	m2.SetTables(shared)
	fresh := &Module{Name: "libc", Bias: bias1}
	fresh.SetSources(src)
	nrows := 0
	for _, pc := range pcs {
		want, wantErr := fresh.row(pc + bias1) // decoded on demand
		for i, m := range []*Module{m1, m2} {
			got, err := m.row(pc + m.Bias)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("pc %#x, module %d: error %v, on demand %v", pc, i, err, wantErr)
			}
			if (got == nil) != (want == nil) || got != nil && !reflect.DeepEqual(*got, *want) {
				t.Fatalf("pc %#x, module %d: prepared row %+v, on demand %+v", pc, i, got, want)
			}
		}
		if want != nil {
			nrows++
		}
	}
	if nrows < len(pcs)/2 {
		t.Fatalf("only %d of %d pcs have a row", nrows, len(pcs))
	}
	// What Prepare decoded is what the walks found: cached entries.
	hits := 0
	for _, pc := range pcs[:600] {
		set := rowSet(pc)
		for i := set; i < set+2; i++ {
			if e := shared.rows[i].Load(); e != nil && e.pc == pc {
				hits++
			}
		}
	}
	if hits == 0 {
		t.Fatal("no prepared row is in the cache")
	}
}
