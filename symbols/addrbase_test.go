package symbols

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// TestSkeletonWithoutAddrBase: a DWARF 5 skeleton unit whose DW_AT_addr_base
// is gone (renamed in .debug_abbrev to DW_AT_macros, which nothing here
// reads) resolves its indexed addresses, and its split unit's, from just past
// the .debug_addr header: every address gives the frames of the build with
// the attribute. (A base of 0, gdb's and elfutils' default, reads the
// header's length and version as the first address: no frame is found.)
func TestSkeletonWithoutAddrBase(t *testing.T) {
	splitPath := build(t, "dw_inline.c", "-O2", "-gdwarf-5", "-gsplit-dwarf")
	dir := t.TempDir()
	bin := filepath.Join(dir, filepath.Base(splitPath))
	copyFile(t, splitPath, bin)
	dwos, _ := filepath.Glob(filepath.Join(filepath.Dir(splitPath), "*.dwo"))
	if len(dwos) != 1 {
		t.Fatalf(".dwo files next to the split build: %v", dwos)
	}
	copyFile(t, dwos[0], filepath.Join(dir, filepath.Base(dwos[0])))
	dropAddrBase(t, bin)

	want, got := open(t, splitPath), open(t, bin)
	addrs := codeAddresses(t, splitPath)
	compareAll(t, want, got, addrs)
	if w := got.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}
}

// dropAddrBase renames the one DW_AT_addr_base (DW_FORM_sec_offset) of
// path's .debug_abbrev to DW_AT_macros in place.
func dropAddrBase(t *testing.T, path string) {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := ef.Section(".debug_abbrev")
	if s == nil || s.Flags&elf.SHF_COMPRESSED != 0 {
		ef.Close()
		t.Fatal("no uncompressed .debug_abbrev")
	}
	off := s.Offset
	data, err := s.Data()
	ef.Close()
	if err != nil {
		t.Fatal(err)
	}
	const addrBase, secOffset, macros = 0x73, 0x17, 0x79
	pair := []byte{addrBase, secOffset}
	i := bytes.Index(data, pair)
	if i < 0 || bytes.Count(data, pair) != 1 {
		t.Fatalf("%d DW_AT_addr_base/DW_FORM_sec_offset pairs in .debug_abbrev", bytes.Count(data, pair))
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{macros}, int64(off)+int64(i)); err != nil {
		t.Fatal(err)
	}
}
