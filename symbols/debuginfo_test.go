package symbols

import (
	"bufio"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/symbols/debugfile"
)

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed", name)
	}
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// TestSeparateDebugFiles: a stripped binary finds its DWARF through
// .gnu_debuglink and through the build-id directory, and answers exactly
// as the unstripped binary does; without either it falls back to the
// symbol table and gives a hint.
func TestSeparateDebugFiles(t *testing.T) {
	orig := build(t, "dw_inline.c", "-O2", "-Wl,--build-id")
	want := open(t, orig)
	addrs := codeAddresses(t, orig)
	dir := t.TempDir()

	debug := filepath.Join(dir, "dw_inline.debug")
	run(t, "objcopy", "--only-keep-debug", orig, debug)

	t.Run("debuglink", func(t *testing.T) {
		stripped := filepath.Join(dir, "linked")
		run(t, "objcopy", "--strip-debug", "--add-gnu-debuglink="+debug, orig, stripped)
		b := open(t, stripped)
		if b.DebugFile() != debug {
			t.Fatalf("debug file %q, want %q (warnings %v)", b.DebugFile(), debug, b.Warnings())
		}
		compareAll(t, want, b, addrs)
	})
	t.Run("build-id", func(t *testing.T) {
		f, err := elf.Open(orig)
		if err != nil {
			t.Fatal(err)
		}
		id, err := debugfile.BuildID(f)
		f.Close()
		if err != nil || len(id) < 2 {
			t.Fatalf("build-id: %x %v", id, err)
		}
		root := filepath.Join(dir, "debugroot")
		h := hex.EncodeToString(id)
		p := filepath.Join(root, ".build-id", h[:2], h[2:]+".debug")
		os.MkdirAll(filepath.Dir(p), 0o755)
		copyFile(t, debug, p)
		stripped := filepath.Join(dir, "byid")
		run(t, "objcopy", "--strip-debug", orig, stripped)
		b, err := Open(stripped, &Options{Search: debugfile.Options{DebugDirs: []string{root}}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if b.DebugFile() != p {
			t.Fatalf("debug file %q, want %q (warnings %v)", b.DebugFile(), p, b.Warnings())
		}
		compareAll(t, want, b, addrs)
	})
	t.Run("none", func(t *testing.T) {
		stripped := filepath.Join(dir, "bare")
		run(t, "objcopy", "--strip-debug", orig, stripped)
		b, err := Open(stripped, &Options{Search: debugfile.Options{DebugDirs: []string{}}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if b.HasDWARF() || b.Hint() == "" {
			t.Fatalf("HasDWARF %v, hint %q", b.HasDWARF(), b.Hint())
		}
		syms := elfSymbols(t, orig)
		for name, addr := range map[string]uint64{"scale.constprop.0": syms["scale.constprop.0"] + 1, "main": syms["main"]} {
			frames, err := b.Lookup(addr)
			if err != nil || len(frames) != 1 || frames[0].Function != name || !frames[0].FromSymbolTable || frames[0].Line != 0 {
				t.Errorf("%#x: %+v %v, want symbol %s", addr, frames, err, name)
			}
		}
	})
}

// TestPLTAndNoInventedNames: PLT stubs are named sym@plt; an address in
// no symbol's range (padding between functions) gets no name at all.
func TestPLTAndNoInventedNames(t *testing.T) {
	path := build(t, "dw_inline.c", "-O0")
	b := open(t, path)
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plt := f.Section(".plt.sec")
	if plt == nil {
		plt = f.Section(".plt")
	}
	found := false
	for a := plt.Addr; a < plt.Addr+plt.Size; a++ {
		frames, _ := b.Lookup(a)
		if len(frames) == 1 && frames[0].Function == "printf@plt" {
			found = true
			break
		}
	}
	if !found {
		t.Errorf("no address of %s is named printf@plt", plt.Name)
	}
	// Padding after main (functions are 16-byte aligned): no symbol there.
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == "main" {
			end := s.Value + s.Size
			if end%16 == 0 {
				t.Skip("main ends on an alignment boundary: no padding to probe")
			}
			frames, _ := b.Lookup(end)
			for _, fr := range frames {
				if fr.Function != "" {
					t.Errorf("padding %#x after main named %+v", end, frames)
				}
			}
		}
	}
}

// TestVDSOFromMemory opens this process's vDSO from its memory image.
func TestVDSOFromMemory(t *testing.T) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var start, end uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasSuffix(sc.Text(), "[vdso]") {
			r := strings.Fields(sc.Text())[0]
			lo, hi, _ := strings.Cut(r, "-")
			start, _ = strconv.ParseUint(lo, 16, 64)
			end, _ = strconv.ParseUint(hi, 16, 64)
		}
	}
	if start == 0 {
		t.Skip("no [vdso] mapping")
	}
	// Read the image the way a debugger reads a target's vDSO: from memory.
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Skip(err)
	}
	defer mem.Close()
	image := make([]byte, end-start)
	if _, err := mem.ReadAt(image, int64(start)); err != nil {
		t.Skip("cannot read /proc/self/mem: ", err)
	}
	b, err := OpenBytes("[vdso]", image, &Options{NoSearch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ef, err := elf.NewFile(strings.NewReader(string(image)))
	if err != nil {
		t.Fatal(err)
	}
	dyn, _ := ef.DynamicSymbols()
	for _, s := range dyn {
		if s.Name == "__vdso_clock_gettime" {
			frames, err := b.Lookup(s.Value + 1)
			if err != nil || len(frames) != 1 || !strings.Contains(frames[0].Function, "clock_gettime") {
				t.Fatalf("vDSO clock_gettime at %#x: %+v %v", s.Value, frames, err)
			}
			u, err := b.UnwindSections()
			if err != nil || u.EhFrame.Data == nil {
				t.Errorf("vDSO unwind sections: %+v %v", u, err)
			}
			return
		}
	}
	t.Skip("vDSO without __vdso_clock_gettime")
}

// TestUnwindSectionsFromDebugFile: .debug_frame may exist only in the
// separate debug file; .eh_frame(_hdr) come from the binary with addresses.
func TestUnwindSectionsFromDebugFile(t *testing.T) {
	orig := build(t, "dw_inline.c", "-O2", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-g")
	dir := t.TempDir()
	debug := filepath.Join(dir, "x.debug")
	stripped := filepath.Join(dir, "x")
	run(t, "objcopy", "--only-keep-debug", orig, debug)
	run(t, "objcopy", "--strip-debug", "--add-gnu-debuglink="+debug, orig, stripped)
	f, _ := elf.Open(orig)
	hasDF := f.Section(".debug_frame") != nil
	hdr := f.Section(".eh_frame_hdr")
	f.Close()
	if !hasDF {
		t.Skip("gcc emitted no .debug_frame")
	}
	b := open(t, stripped)
	u, err := b.UnwindSections()
	if err != nil {
		t.Fatal(err)
	}
	if u.DebugFrame.Data == nil || u.DebugFrame.File != debug {
		t.Errorf(".debug_frame: %d bytes from %q, want from %q", len(u.DebugFrame.Data), u.DebugFrame.File, debug)
	}
	if hdr != nil && (u.EhFrameHdr.Addr != hdr.Addr || u.EhFrameHdr.File != stripped) {
		t.Errorf(".eh_frame_hdr: %+v", u.EhFrameHdr)
	}
}

// TestDWZSupplementaryFile: after dwz moved shared DIEs into partial units
// and a supplementary file (.gnu_debugaltlink, DW_FORM_GNU_ref_alt and
// strp_alt), every address gives the frames of the original build.
func TestDWZSupplementaryFile(t *testing.T) {
	if _, err := exec.LookPath("dwz"); err != nil {
		t.Skip("dwz not installed")
	}
	a := build(t, "dw_cxx.cc", "-O2")
	b := build(t, "dw_cxx.cc", "-O2", "-DSECOND_COPY")
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	copyFile(t, a, pa)
	copyFile(t, b, pb)
	common := filepath.Join(dir, "common.debug")
	run(t, "dwz", "-m", common, "-M", common, pa, pb)
	f, err := elf.Open(pa)
	if err != nil {
		t.Fatal(err)
	}
	alt := f.Section(".gnu_debugaltlink")
	f.Close()
	if alt == nil {
		t.Skip("dwz made no supplementary file for these binaries")
	}
	got := open(t, pa)
	if got.dw.alt == nil {
		t.Fatalf("supplementary file not loaded: %v", got.Warnings())
	}
	compareAll(t, open(t, a), got, codeAddresses(t, a))
}

// TestCompressedSections: zlib (SHF_COMPRESSED), zstd and legacy .zdebug_*
// sections give the frames of the uncompressed build.
func TestCompressedSections(t *testing.T) {
	plainPath := build(t, "dw_inline.c", "-O2")
	plain := open(t, plainPath)
	addrs := codeAddresses(t, plainPath)
	dir := t.TempDir()
	for _, z := range []string{"zlib", "zlib-gnu", "zstd"} {
		t.Run(z, func(t *testing.T) {
			p := filepath.Join(dir, z)
			run(t, "objcopy", "--compress-debug-sections="+z, plainPath, p)
			f, err := elf.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			s := f.Section(".debug_info")
			if z == "zlib-gnu" {
				s = f.Section(".zdebug_info")
			}
			compressed := s != nil && (z == "zlib-gnu" || s.Flags&elf.SHF_COMPRESSED != 0)
			f.Close()
			if !compressed {
				t.Skipf("objcopy did not compress with %s", z)
			}
			compareAll(t, plain, open(t, p), addrs)
		})
	}
}
