package debugfile

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/symbols/debuginfod"
	"github.com/sondedbg/sonde/symbols/debuginfod/debuginfodtest"
	"github.com/sondedbg/sonde/symbols/elfsym"
)

// nmNames runs nm and returns the names whose type letter is in types
// ("" = any), like the shell pipelines of gdb's MiniDebugInfo recipe.
func nmNames(t *testing.T, types string, args ...string) []string {
	t.Helper()
	out := run(t, "nm", append([]string{"--format=posix", "--defined-only"}, args...)...)
	var names []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (types == "" || strings.Contains(types, f[1])) {
			names = append(names, f[0])
		}
	}
	sort.Strings(names)
	return names
}

// makeMiniDebugInfo builds a stripped binary with .gnu_debugdata the way
// Fedora does (gdb manual, "MiniDebugInfo"): keep the function symbols that
// .dynsym lacks in an --only-keep-debug copy stripped of debug sections,
// xz it, and add it to the stripped binary. xzArgs go to xz.
func makeMiniDebugInfo(t *testing.T, bin, dir string, xzArgs ...string) string {
	t.Helper()
	needTool(t, "nm", "objcopy", "xz")
	dyn := map[string]bool{}
	for _, n := range nmNames(t, "", "-D", bin) {
		dyn[n] = true
	}
	var keep []string
	for _, n := range nmNames(t, "Tt", bin) {
		if !dyn[n] {
			keep = append(keep, n)
		}
	}
	keepFile := filepath.Join(dir, "keep_symbols")
	os.WriteFile(keepFile, []byte(strings.Join(keep, "\n")+"\n"), 0o644)
	debug, mini := filepath.Join(dir, "debug"), filepath.Join(dir, "mini_debuginfo")
	run(t, "objcopy", "--only-keep-debug", bin, debug)
	run(t, "objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment",
		"--keep-symbols="+keepFile, debug, mini)
	run(t, "xz", append(append([]string{"-f"}, xzArgs...), mini)...)
	out := filepath.Join(dir, "prog")
	run(t, "objcopy", "--strip-all", "-R", ".comment", bin, out+".tmp")
	run(t, "objcopy", "--add-section", ".gnu_debugdata="+mini+".xz", out+".tmp", out)
	return out
}

func TestMiniDebugInfo(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	prog := makeMiniDebugInfo(t, bin, t.TempDir())
	f := openELF(t, prog)
	mini, err := OpenMiniDebugInfo(f, 0)
	if err != nil || mini == nil {
		t.Fatalf("OpenMiniDebugInfo: %v, %v", mini, err)
	}
	r, err := Find(ctx, prog, f, Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.File != nil || r.MiniDebugInfo == nil || !strings.Contains(r.Hint(), "only MiniDebugInfo") {
		t.Errorf("Find: file %v mini %v hint %q", r.Path, r.MiniDebugInfo != nil, r.Hint())
	}

	// The static function is back, at the address the full binary has.
	full, err := elfsym.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := elfsym.New(prog, f, mini)
	if err != nil {
		t.Fatal(err)
	}
	want := full.ByName("sym_static_func")[0]
	got, off, ok := tab.Lookup(want.Addr + 1)
	if !ok || got.Name != "sym_static_func" || off != 1 || got.Size != want.Size {
		t.Errorf("Lookup in static function = %+v+%d %v, want %+v", got, off, ok, want)
	}
	plain, _ := elfsym.New(prog, f)
	if s, _, ok := plain.Lookup(want.Addr + 1); ok {
		t.Errorf("without MiniDebugInfo the stripped binary named %s", s.Name)
	}
	// gdb reads the same symbols from .gnu_debugdata.
	if _, err := exec.LookPath("gdb"); err == nil {
		out, _ := gdbtest.Run("-ex", "info symbol 0x"+strconvHex(want.Addr+1), prog)
		if !strings.HasPrefix(string(out), "sym_static_func + 1 in section .text") {
			t.Errorf("gdb: %s", out)
		}
	}
}

func strconvHex(v uint64) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v >>= 4 {
		b = append([]byte{digits[v&15]}, b...)
	}
	return string(b)
}

// TestMiniDebugInfoHostile: bad xz data never crashes, never allocates
// what the stream asks for, and the error names the binary.
func TestMiniDebugInfoHostile(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	dir := t.TempDir()
	prog := makeMiniDebugInfo(t, bin, dir)
	xzData, err := os.ReadFile(filepath.Join(dir, "mini_debuginfo.xz"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(xzData)
	flipped[len(flipped)/2] ^= 0x55
	for name, data := range map[string][]byte{
		"empty":     {},
		"garbage":   []byte("this is not xz data at all, sorry"),
		"truncated": xzData[:len(xzData)-7],
		"flipped":   flipped,
		"trailing":  append(bytes.Clone(xzData), 1, 2, 3, 4),
	} {
		if _, err := DecodeMiniDebugInfo(data, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := DecodeMiniDebugInfo(xzData, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit of 100 bytes: %v, want ErrTooLarge", err)
	}
	// A real xz stream that asks for a 256 MiB dictionary is refused before
	// the decoder allocates it.
	big := makeMiniDebugInfo(t, bin, t.TempDir(), "--lzma2=dict=256MiB")
	_, err = OpenMiniDebugInfo(openELF(t, big), 0)
	if err == nil || !strings.Contains(err.Error(), "dictionary") {
		t.Errorf("256 MiB dictionary: %v", err)
	}

	// In a binary: Find records the error against the binary and goes on.
	bad := filepath.Join(dir, "bad")
	os.WriteFile(filepath.Join(dir, "garbage.xz"), []byte("\xfd7zXZ\x00garbage"), 0o644)
	run(t, "objcopy", "--remove-section", ".gnu_debugdata", prog, bad+".tmp")
	run(t, "objcopy", "--add-section", ".gnu_debugdata="+filepath.Join(dir, "garbage.xz"), bad+".tmp", bad)
	r, err := Find(ctx, bad, openELF(t, bad), Options{DebugDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	e := attemptErr(r, MethodMiniDebugInfo, bad)
	var fe *FormatError
	if e == nil || !strings.Contains(e.Error(), bad) || !errors.As(e, &fe) {
		t.Errorf("bad .gnu_debugdata: %v", e)
	}
}

// TestCompressedSections: DWARF compressed with zlib (gcc -gz=zlib) and
// zstd (the linker's and objcopy's --compress-debug-sections=zstd), in the
// binary and in a separate debug file, is found and readable.
func TestCompressedSections(t *testing.T) {
	const (
		chZlib = 1 // ELFCOMPRESS_ZLIB
		chZstd = 2 // ELFCOMPRESS_ZSTD
	)
	for _, c := range []struct {
		name  string
		flags []string
		ch    int
	}{
		{"zlib", []string{"-gz=zlib"}, chZlib},
		{"zstd", []string{"-Wl,--compress-debug-sections=zstd"}, chZstd},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := buildProg(t, "sym_dbg_"+c.name, c.flags...)
			checkCompressed(t, bin, c.ch)
			f := openELF(t, bin)
			r, err := Find(ctx, bin, f, Options{DebugDirs: []string{}})
			if err != nil || r.Method != MethodBinary || !hasFunction(t, r.File, "sym_global_func") {
				t.Fatalf("Find: %v %v", r.Method, err)
			}
		})
	}
	t.Run("separate-zstd", func(t *testing.T) {
		bin := buildProg(t, "sym_dbg")
		dir := t.TempDir()
		stripped, debug := split(t, bin, filepath.Join(dir, "bin"))
		f := openELF(t, stripped)
		id, _ := BuildID(f)
		h := hexString(id)
		target := filepath.Join(dir, "debug", ".build-id", h[:2], h[2:]+".debug")
		os.MkdirAll(filepath.Dir(target), 0o755)
		run(t, "objcopy", "--compress-debug-sections=zstd", debug, target)
		checkCompressed(t, target, chZstd)
		r, err := Find(ctx, stripped, f, Options{DebugDirs: []string{filepath.Join(dir, "debug")}})
		if err != nil || r.Method != MethodBuildID {
			t.Fatalf("Find: %v %v %v", r.Method, err, r.Tried)
		}
		defer r.Close()
		if !hasFunction(t, r.File, "sym_static_func") {
			t.Errorf("no DWARF through zstd")
		}
	})
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// checkCompressed makes sure the test is about what it claims: .debug_info
// really is SHF_COMPRESSED with the expected algorithm.
func checkCompressed(t *testing.T, path string, ch int) {
	t.Helper()
	f := openELF(t, path)
	s := f.Section(".debug_info")
	if s == nil || s.Flags&elf.SHF_COMPRESSED == 0 {
		t.Fatalf("%s: .debug_info is not compressed", path)
	}
	raw := make([]byte, 4) // Elf64_Chdr.ch_type, read from the file itself
	osf, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	if _, err := osf.ReadAt(raw, int64(s.Offset)); err != nil {
		t.Fatal(err)
	}
	if got := int(f.ByteOrder.Uint32(raw)); got != ch {
		t.Fatalf("%s: compression type %d, want %d", path, got, ch)
	}
}

// TestFindViaDebuginfod: nothing local, the real debuginfod server has it.
func TestFindViaDebuginfod(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	dir := t.TempDir()
	stripped, _ := split(t, bin, filepath.Join(dir, "served"))
	f := openELF(t, stripped)
	id, _ := BuildID(f)
	srv := debuginfodtest.Start(t, filepath.Join(dir, "served"), id)
	c, err := debuginfod.New(debuginfod.Options{URLs: []string{srv.URL}, CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Find(context.Background(), stripped, f, Options{DebugDirs: []string{filepath.Join(dir, "none")}, Debuginfod: c})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Method != MethodDebuginfod || !strings.HasPrefix(r.Path, filepath.Join(dir, "cache")) || !hasFunction(t, r.File, "sym_global_func") {
		t.Fatalf("Find = %v %s, tried %v", r.Method, r.Path, r.Tried)
	}
}

// TestMiniDebugInfoXZVariants: the stream layouts the xz tool can produce
// (integrity checks, several blocks, presets) all pass the pre-decoding
// checks and decode to the same symbols.
func TestMiniDebugInfoXZVariants(t *testing.T) {
	bin := buildProg(t, "sym_dbg")
	for _, args := range [][]string{
		{"--check=none"}, {"--check=crc32"}, {"--check=sha256"},
		{"--block-size=1024"}, {"-9e"}, {"-0"},
	} {
		prog := makeMiniDebugInfo(t, bin, t.TempDir(), args...)
		mini, err := OpenMiniDebugInfo(openELF(t, prog), 0)
		if err != nil || mini == nil {
			t.Errorf("xz %v: %v", args, err)
			continue
		}
		syms, err := mini.Symbols()
		found := false
		for _, s := range syms {
			found = found || s.Name == "sym_static_func"
		}
		if err != nil || !found {
			t.Errorf("xz %v: symbols %d, %v; sym_static_func missing", args, len(syms), err)
		}
	}
}
