package cfi

import (
	"debug/elf"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// seedSections returns real CFI sections of a small test program as fuzz seeds.
func seedSections(f *testing.F, flags ...string) (eh, hdr, debug []byte, ehAddr, hdrAddr uint64) {
	path, err := testprog.BuildE(testprog.Spec{Sources: []string{"uw_main.c"}, Flags: append(flags, "-DNO_ASM"), Name: "uw_main_fuzzseed"})
	if err != nil {
		f.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer ef.Close()
	if s := ef.Section(".eh_frame"); s != nil {
		eh, _ = s.Data()
		ehAddr = s.Addr
	}
	if s := ef.Section(".eh_frame_hdr"); s != nil {
		hdr, _ = s.Data()
		hdrAddr = s.Addr
	}
	if s := ef.Section(".debug_frame"); s != nil {
		debug, _ = s.Data()
	}
	return
}

// exercise runs every public operation on a table built from fuzzed bytes.
func exercise(t *Table, pc uint64) {
	var row Row
	t.RowFor(pc, &row)
	n := 0
	t.ForEachFDE(func(f FDE) error {
		at := f.PCBegin
		if span := f.PCEnd - f.PCBegin; span != 0 {
			at += pc % span
		}
		t.Row(&f, at, &row)
		if n++; n > 64 {
			return errStop
		}
		return nil
	})
}

func FuzzEHFrame(f *testing.F) {
	eh, hdr, _, ehAddr, hdrAddr := seedSections(f, "-O2")
	f.Add(eh, hdr, ehAddr, hdrAddr, uint64(0x1200))
	f.Add(eh, []byte(nil), ehAddr, uint64(0), uint64(0x1300))
	// A CIE with every augmentation and a DWARF64 length.
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		1, 'z', 'P', 'L', 'R', 'S', 0, 1, 0x78, 16, 7, 0x9b, 0, 0, 0, 0, 0x1b, 0x1b, 0x0c, 7, 8, 0x90, 1, 0},
		[]byte(nil), uint64(0), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, data, hdr []byte, addr, hdrAddr, pc uint64) {
		tab := NewEHFrame(data, Options{Addr: addr, Hdr: hdr, HdrAddr: hdrAddr})
		exercise(tab, pc)
	})
}

func FuzzDebugFrame(f *testing.F) {
	_, _, debug, _, _ := seedSections(f, "-O2", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")
	f.Add(debug, uint64(0x1200), 8)
	f.Add([]byte{0x0c, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 4, 0, 8, 0, 1, 0x78, 16, 0x0c, 7, 8}, uint64(0), 4)
	f.Fuzz(func(t *testing.T, data []byte, pc uint64, addrSize int) {
		tab := NewDebugFrame(data, Options{AddrSize: addrSize})
		exercise(tab, pc)
	})
}
