package symbols

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sondedbg/sonde/dwarf"
)

// TestSplitDWARFMatchesUnsplit: a -gsplit-dwarf build has the same code as
// the normal build, so every address must give the same frames - from the
// .dwo files (DWARF 5 and the DWARF 4 GNU extension) and from a .dwp package.
// addr2line and eu-stack lose inline frames here.
func TestSplitDWARFMatchesUnsplit(t *testing.T) {
	for _, src := range []string{"dw_inline.c", "dw_cxx.cc"} {
		for _, dw := range []string{"-gdwarf-5", "-gdwarf-4"} {
			t.Run(src+dw, func(t *testing.T) {
				plainPath := build(t, src, "-O2", dw)
				splitPath := build(t, src, "-O2", dw, "-gsplit-dwarf")
				plain, split := open(t, plainPath), open(t, splitPath)
				addrs := codeAddresses(t, splitPath)
				if !reflect.DeepEqual(addrs, codeAddresses(t, plainPath)) {
					t.Fatal("split and plain builds have different code")
				}
				compareAll(t, plain, split, addrs)
				if w := split.Warnings(); len(w) > 0 {
					t.Errorf("warnings: %v", w)
				}

				// The same from a .dwp package, with the .dwo files gone.
				dir := t.TempDir()
				bin := filepath.Join(dir, filepath.Base(splitPath))
				copyFile(t, splitPath, bin)
				dwos, _ := filepath.Glob(filepath.Join(filepath.Dir(splitPath), "*.dwo"))
				if len(dwos) != 1 {
					t.Fatalf(".dwo files next to the split build: %v", dwos)
				}
				if dw == "-gdwarf-4" {
					if _, err := exec.LookPath("dwp"); err != nil {
						t.Skip("dwp (binutils gold) not installed")
					}
					if out, err := exec.Command("dwp", "-o", bin+".dwp", dwos[0]).CombinedOutput(); err != nil {
						t.Fatalf("dwp: %v\n%s", err, out)
					}
				} else {
					// gold's dwp drops DWARF 5 range lists and DWO ids, and
					// llvm-dwp 14 hangs on GCC 12 output: package the one .dwo
					// ourselves by adding a DWARF 5 .debug_cu_index to it.
					makeDWP5(t, plain, dwos[0], bin+".dwp")
				}
				// Hide the .dwo files: comp_dir still points at the build directory.
				for _, d := range dwos {
					if err := os.Rename(d, d+".hidden"); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { os.Rename(d+".hidden", d) })
				}
				packaged := open(t, bin)
				compareAll(t, plain, packaged, addrs)
			})
		}
	}
}

func compareAll(t *testing.T, want, got *Binary, addrs []uint64) {
	t.Helper()
	inlined, bad := 0, 0
	for _, a := range addrs {
		w, err1 := want.Lookup(a)
		g, err2 := got.Lookup(a)
		if err1 != nil || err2 != nil {
			t.Fatalf("%#x: %v / %v", a, err1, err2)
		}
		if len(w) > 1 {
			inlined++
		}
		if !reflect.DeepEqual(w, g) {
			if bad++; bad < 10 {
				t.Errorf("%#x:\n got %+v\nwant %+v", a, g, w)
			}
		}
	}
	if inlined == 0 {
		t.Error("no inline frames at all: the comparison proves little")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// makeDWP5 turns a single-unit DWARF 5 .dwo into a .dwp: the sections stay
// as they are (each unit's contribution starts at 0) and a version 5
// .debug_cu_index maps the unit's DWO id to them.
func makeDWP5(t *testing.T, plain *Binary, dwo, out string) {
	t.Helper()
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	ef, err := openELFFile(dwo)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.close()
	d, err := newDWARFFile(ef, true)
	if err != nil {
		t.Fatal(err)
	}
	hdrs, err := dwarf.ReadUnits(".debug_info.dwo", d.sec.info, false)
	if err != nil || len(hdrs) != 1 {
		t.Fatalf("units in %s: %d, %v", dwo, len(hdrs), err)
	}
	id := hdrs[0].Signature
	// Columns: DW_SECT_INFO 1, ABBREV 3, LINE 4, STR_OFFSETS 6, RNGLISTS 8.
	cols := []struct {
		id   uint32
		size int
	}{{1, len(d.sec.info)}, {3, len(d.sec.abbrev)}, {4, len(d.sec.line)}, {6, len(d.sec.strOffsets)}, {8, len(d.sec.rnglists)}}
	const slots = 2
	var b []byte
	u16 := func(v uint16) { b = binary.LittleEndian.AppendUint16(b, v) }
	u32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	u64 := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	u16(5)
	u16(0)
	u32(uint32(len(cols)))
	u32(1)
	u32(slots)
	slot := id & (slots - 1)
	for i := uint64(0); i < slots; i++ {
		if i == slot {
			u64(id)
		} else {
			u64(0)
		}
	}
	for i := uint64(0); i < slots; i++ {
		if i == slot {
			u32(1)
		} else {
			u32(0)
		}
	}
	for _, c := range cols {
		u32(c.id)
	}
	for range cols {
		u32(0) // offsets
	}
	for _, c := range cols {
		u32(uint32(c.size))
	}
	idx := filepath.Join(t.TempDir(), "cu_index")
	if err := os.WriteFile(idx, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command("objcopy", "--add-section", ".debug_cu_index="+idx, dwo, out).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, msg)
	}
}

// TestTypeUnitsChangeNothing: with -fdebug-types-section (DWARF 5 type units
// in .debug_info, DWARF 4 .debug_types) every address gives the frames of
// the plain build.
func TestTypeUnitsChangeNothing(t *testing.T) {
	for _, dw := range []string{"-gdwarf-5", "-gdwarf-4"} {
		t.Run(dw, func(t *testing.T) {
			plainPath := build(t, "dw_cxx.cc", "-O2", dw)
			typesPath := build(t, "dw_cxx.cc", "-O2", dw, "-fdebug-types-section")
			addrs := codeAddresses(t, typesPath)
			if !reflect.DeepEqual(addrs, codeAddresses(t, plainPath)) {
				t.Fatal("builds have different code")
			}
			compareAll(t, open(t, plainPath), open(t, typesPath), addrs)
		})
	}
}

// TestTypeSignatures: every signature a unit refers to (DW_FORM_ref_sig8)
// resolves to its type unit's named type, DWARF 5 and 4 alike.
func TestTypeSignatures(t *testing.T) {
	for _, dw := range []string{"-gdwarf-5", "-gdwarf-4"} {
		path := build(t, "dw_cxx.cc", "-O2", dw, "-fdebug-types-section")
		b := open(t, path)
		b.dw.index()
		seen, named := 0, 0
		for _, cu := range b.dw.units {
			if cu.hdr.Type != dwarf.UnitCompile {
				continue
			}
			ur, err := cu.reader()
			if err != nil {
				t.Fatal(err)
			}
			var e dwarf.Entry
			for !ur.Done() {
				if err := ur.Next(&e); err != nil {
					t.Fatal(err)
				}
				if f := e.Field(dwarf.AttrSignature); f != nil && f.Class == dwarf.ClassRefSig {
					seen++
					if n := b.dw.typeName(f.Val); n != "" {
						named++
					} else if tu := b.dw.typeUnit(f.Val); tu == nil {
						t.Errorf("%s: signature %#x has no type unit", dw, f.Val)
					}
				}
			}
		}
		if seen == 0 || named == 0 {
			t.Errorf("%s: %d signatures, %d named", dw, seen, named)
		}
		if got := b.dw.typeName(0x1234); got != "" {
			t.Errorf("unknown signature named %q", got)
		}
	}
}
