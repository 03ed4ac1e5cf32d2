package main

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

func TestGdbSourceFile(t *testing.T) {
	abs := &unitInfo{name: "t.c", compDir: "/tmp/stk", version: 5}
	rel := &unitInfo{name: "src/main.c", compDir: "/tmp/rel", version: 5}
	glibc := &unitInfo{name: "pthread_create.c", compDir: "./nptl", version: 5}
	dw4 := &unitInfo{name: "t.c", compDir: "/tmp/stk", version: 4}
	for _, c := range []struct {
		file string
		u    *unitInfo
		want string
	}{
		{"/tmp/stk/t.c", abs, "t.c"},                  // the unit's file
		{"/tmp/stk/local.h", abs, "/tmp/stk/local.h"}, // another file in the directory (DWARF 5)
		{"/tmp/stk/local.h", dw4, "local.h"},          // the same in DWARF 4
		{"/usr/include/stdio.h", abs, "/usr/include/stdio.h"},
		{"/tmp/rel/src/main.c", rel, "src/main.c"},
		{"/tmp/rel/include/inc.h", rel, "include/inc.h"},
		{"./nptl/pthread_create.c", glibc, "./nptl/pthread_create.c"},
		{"./nptl/../sysdeps/nptl/futex-internal.h", glibc, "../sysdeps/nptl/futex-internal.h"},
		{"/x/y.c", nil, "/x/y.c"},
	} {
		if got := gdbSourceFile(c.file, c.u); got != c.want {
			t.Errorf("gdbSourceFile(%q, %+v) = %q, want %q", c.file, c.u, got, c.want)
		}
	}
}

// TestReadUnitNamesMatchesDebugDwarf reads every unit listed in aranges of
// test programs (DWARF 4 and 5, C and C++), and
// compares name and compilation directory with Go's debug/dwarf.
func TestReadUnitNamesMatchesDebugDwarf(t *testing.T) {
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
		data := func(name string) []byte {
			s := f.Section(name)
			if s == nil {
				return nil
			}
			b, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		sec := dwarfSections{info: data(".debug_info"), abbrev: data(".debug_abbrev"), str: data(".debug_str"),
			lineStr: data(".debug_line_str"), strOffsets: data(".debug_str_offsets")}
		ranges, err := parseAranges(data(".debug_aranges"))
		if err != nil || len(ranges) == 0 {
			t.Fatalf("%s: %d aranges, %v", p, len(ranges), err)
		}
		d, err := f.DWARF()
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, r := range ranges {
			got, err := readUnitNames(sec, r.unit)
			if err != nil {
				t.Errorf("%s unit %#x: %v", p, r.unit, err)
				continue
			}
			rd := d.Reader()
			rd.Seek(dwarf.Offset(r.unit))
			e, err := rd.Next()
			if err != nil || e == nil {
				t.Fatalf("debug/dwarf at %#x: %v", r.unit, err)
			}
			name, _ := e.Val(dwarf.AttrName).(string)
			compDir, _ := e.Val(dwarf.AttrCompDir).(string)
			if got.name != name || got.compDir != compDir {
				t.Errorf("%s unit %#x: %q in %q, debug/dwarf says %q in %q", p, r.unit, got.name, got.compDir, name, compDir)
			}
			checked++
		}
		f.Close()
		if checked == 0 {
			t.Errorf("%s: no unit checked", p)
		}
	}
}

// TestUnitReaderRejectsDamage: truncated or absurd input is an error, not a
// panic.
func TestUnitReaderRejectsDamage(t *testing.T) {
	if _, err := readUnitNames(dwarfSections{info: []byte{1, 0, 0, 0, 5}}, 0); err == nil {
		t.Error("no error for a truncated unit")
	}
	if _, err := readUnitNames(dwarfSections{}, 10); err == nil {
		t.Error("no error for an offset past the section")
	}
	set := make([]byte, 4, 64)
	set = binary.LittleEndian.AppendUint16(set, 2)
	set = binary.LittleEndian.AppendUint32(set, 0)
	set = append(set, 8, 0, 0, 0, 0, 0)
	set = binary.LittleEndian.AppendUint64(set, 0x1000)
	set = binary.LittleEndian.AppendUint64(set, 0x10)
	set = binary.LittleEndian.AppendUint64(set, 0)
	set = binary.LittleEndian.AppendUint64(set, 0)
	binary.LittleEndian.PutUint32(set, uint32(len(set)-4))
	r, err := parseAranges(set)
	if err != nil || len(r) != 1 || r[0].start != 0x1000 || r[0].end != 0x1010 {
		t.Fatalf("good set: %+v %v", r, err)
	}
	binary.LittleEndian.PutUint32(set, 1000)
	if _, err := parseAranges(set); err == nil {
		t.Error("no error for a set longer than the section")
	}
}

func FuzzParseAranges(f *testing.F) {
	f.Add([]byte{0x2c, 0, 0, 0, 2, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _ := parseAranges(data)
		for _, a := range r {
			if a.end <= a.start {
				t.Fatalf("empty range %+v", a)
			}
		}
	})
}

func FuzzReadUnitNames(f *testing.F) {
	// A DWARF 5 unit: name and comp_dir as DW_FORM_string, then str_offsets_base.
	abbrev := []byte{1, 0x11, 1, 0x03, 0x08, 0x1b, 0x08, 0x72, 0x17, 0x25, 0x25, 0, 0, 0}
	unit := []byte{0, 0, 0, 0, 5, 0, 1, 8, 0, 0, 0, 0, 1, 'a', '.', 'c', 0, '/', 'd', 0, 8, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(unit, uint32(len(unit)-4))
	f.Add(unit, abbrev, []byte("s\x00"), []byte{4, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0}, []byte{1, 0x11, 0, 0x03, 0x16, 0, 0}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, info, abbrev, str, strOffsets []byte) {
		sec := dwarfSections{info: info, abbrev: abbrev, str: str, lineStr: str, strOffsets: strOffsets}
		readUnitNames(sec, 0)
	})
}
