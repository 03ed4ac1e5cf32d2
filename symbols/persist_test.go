package symbols

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/pcache"
)

// persistEverything lowers the size thresholds so the small test programs
// persist their sections and index; restored after the test.
func persistEverything(t *testing.T) {
	oldS, oldI := minPersistSize, minIndexedInfo
	minPersistSize, minIndexedInfo = 0, 0
	t.Cleanup(func() { minPersistSize, minIndexedInfo = oldS, oldI })
}

// compressedProgram builds a two-unit -O2 program with inline frames and
// returns it and a copy with zlib-compressed debug sections.
func compressedProgram(t *testing.T) (plain, compressed string) {
	t.Helper()
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	plain = testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c", "dw_second.c"}, Flags: []string{"-O2"}, Name: "dw_two_units"})
	compressed = filepath.Join(t.TempDir(), "compressed")
	run(t, "objcopy", "--compress-debug-sections=zlib", plain, compressed)
	return plain, compressed
}

func openWith(t *testing.T, path string, opts *Options) *Binary {
	t.Helper()
	b, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// compareLines compares LineAt over addrs.
func compareLines(t *testing.T, want, got *Binary, addrs []uint64) {
	t.Helper()
	for _, a := range addrs {
		w, okw, errw := want.LineAt(a)
		g, okg, errg := got.LineAt(a)
		if okw != okg || (errw == nil) != (errg == nil) || !reflect.DeepEqual(w, g) {
			t.Fatalf("LineAt(%#x): got %+v %v %v, want %+v %v %v", a, g, okg, errg, w, okw, errw)
		}
	}
}

// TestOpenInflatesNothing: Open reads headers only; a lookup inflates the
// sections it reads and no other (.debug_loclists stays compressed).
func TestOpenInflatesNothing(t *testing.T) {
	plain, compressed := compressedProgram(t)
	b := openWith(t, compressed, &Options{NoPersistentCache: true})
	inflated := func(name string) bool {
		i := b.ef.sectionIndex(name)
		if i < 0 {
			t.Fatalf("no section %s", name)
		}
		if !isCompressed(b.ef.f.Sections[i]) {
			t.Fatalf("%s is not compressed", name)
		}
		return b.ef.slots[i].data != nil
	}
	for _, s := range b.ef.f.Sections {
		if isCompressed(s) && b.ef.slots[b.ef.sectionIndex(s.Name)].data != nil {
			t.Fatalf("%s inflated at Open", s.Name)
		}
	}
	addrs := codeAddresses(t, plain)
	if _, err := b.Lookup(addrs[len(addrs)/2]); err != nil {
		t.Fatal(err)
	}
	if !inflated(".debug_info") || !inflated(".debug_line") {
		t.Error("lookup did not read .debug_info and .debug_line")
	}
	if b.ef.sectionIndex(".debug_loclists") >= 0 && inflated(".debug_loclists") {
		t.Error(".debug_loclists inflated by a lookup that does not need it")
	}
}

// TestPersistedSameAnswers: with the persisted cache cold (it is filled),
// warm (sections and index come from the cache file) and disabled, every
// lookup answers as for the uncompressed program, for each compression.
func TestPersistedSameAnswers(t *testing.T) {
	persistEverything(t)
	plain, _ := compressedProgram(t)
	addrs := codeAddresses(t, plain)
	want := openWith(t, plain, &Options{NoPersistentCache: true})
	for _, z := range []string{"zlib", "zlib-gnu", "zstd"} {
		t.Run(z, func(t *testing.T) {
			compressed := filepath.Join(t.TempDir(), z)
			run(t, "objcopy", "--compress-debug-sections="+z, plain, compressed)
			ef, err := openELFFile(compressed)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range ef.f.Sections {
				if persistable(s) {
					n++
				}
			}
			ef.close()
			if n == 0 {
				t.Skipf("objcopy did not compress with %s", z)
			}
			samePersisted(t, want, compressed, addrs)
		})
	}
}

// persisted waits for the cache writes b started in the background.
func persisted(b *Binary) {
	for _, ef := range []*elfFile{b.ef, b.debug} {
		if ef != nil && ef.persist != nil {
			ef.persist.wait()
		}
	}
}

func samePersisted(t *testing.T, want *Binary, compressed string, addrs []uint64) {
	cache := &pcache.Cache{Dir: filepath.Join(t.TempDir(), "pc")}
	off := openWith(t, compressed, &Options{NoPersistentCache: true})
	if off.ef.persist != nil {
		t.Fatal("NoPersistentCache ignored")
	}
	compareAll(t, want, off, addrs)

	cold := openWith(t, compressed, &Options{PersistentCache: cache})
	compareAll(t, want, cold, addrs)
	compareLines(t, want, cold, addrs)
	persisted(cold)
	if p := cold.ef.persist; p == nil || p.loaded || p.err != nil && pcache.ReasonOf(p.err) != pcache.ReasonMissing {
		t.Fatalf("cold open: %+v", p)
	}

	warm := openWith(t, compressed, &Options{PersistentCache: cache})
	compareAll(t, want, warm, addrs)
	compareLines(t, want, warm, addrs)
	p := warm.ef.persist
	if p == nil || !p.loaded || p.index == nil || p.err != nil {
		t.Fatalf("warm open did not use the cache: %+v", p)
	}
	if len(warm.Warnings()) != 0 {
		t.Errorf("warnings: %v", warm.Warnings())
	}
	// The warm answers came from the mapped cache file.
	i := warm.ef.sectionIndex(".debug_info")
	name := warm.ef.f.Sections[i].Name // .zdebug_info for zlib-gnu
	if d, _ := p.file.Section(persistClientID.Name, name); len(d) == 0 || &d[0] != &warm.ef.slots[i].data[0] {
		t.Error(".debug_info not served from the cache file")
	}
	fns := []string{"dw_second_entry", "main"}
	for _, fn := range fns {
		w, err1 := want.LookupFunction(fn)
		g, err2 := warm.LookupFunction(fn)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(w, g) {
			t.Errorf("LookupFunction(%s): got %+v %v, want %+v %v", fn, g, err2, w, err1)
		}
	}
}

// TestDamagedOrStaleCacheRebuilt: a cache file with a flipped byte, or one
// derived from an older version of the file, is ignored (with the reason)
// and replaced by a good one.
func TestDamagedOrStaleCacheRebuilt(t *testing.T) {
	persistEverything(t)
	plain, compressed := compressedProgram(t)
	addrs := codeAddresses(t, plain)
	want := openWith(t, plain, &Options{NoPersistentCache: true})
	cache := &pcache.Cache{Dir: filepath.Join(t.TempDir(), "pc")}
	first := openWith(t, compressed, &Options{PersistentCache: cache})
	compareAll(t, want, first, addrs)
	persisted(first)
	files, _ := filepath.Glob(filepath.Join(cache.Dir, "*.pcache"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{len(data) / 2, 4096 + 10, 20} {
		bad := append([]byte(nil), data...)
		bad[at] ^= 0x40
		if err := os.WriteFile(files[0], bad, 0o600); err != nil {
			t.Fatal(err)
		}
		b := openWith(t, compressed, &Options{PersistentCache: cache})
		compareAll(t, want, b, addrs)
		persisted(b)
		if p := b.ef.persist; p.loaded || p.err == nil {
			t.Fatalf("byte %d flipped: cache used (%+v)", at, p)
		}
		again := openWith(t, compressed, &Options{PersistentCache: cache})
		compareAll(t, want, again, addrs)
		if p := again.ef.persist; !p.loaded || p.index == nil {
			t.Fatalf("byte %d flipped: cache not rebuilt (%v)", at, p.err)
		}
	}
	// A newer version of the file (same path, new mtime) does not meet the
	// old cache entry.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(compressed, later, later); err != nil {
		t.Fatal(err)
	}
	b := openWith(t, compressed, &Options{PersistentCache: cache})
	compareAll(t, want, b, addrs)
	if p := b.ef.persist; p.loaded || pcache.ReasonOf(p.err) != pcache.ReasonModule {
		t.Fatalf("stale cache: loaded %v err %v", p.loaded, p.err)
	}
}

// TestNoCacheEnv: SONDE_NO_CACHE=1 disables the default cache.
func TestNoCacheEnv(t *testing.T) {
	persistEverything(t)
	_, compressed := compressedProgram(t)
	t.Setenv("SONDE_CACHE_DIR", t.TempDir())
	t.Setenv("SONDE_NO_CACHE", "1")
	if b := openWith(t, compressed, nil); b.ef.persist != nil {
		t.Fatal("SONDE_NO_CACHE=1 ignored")
	}
	t.Setenv("SONDE_NO_CACHE", "")
	if b := openWith(t, compressed, nil); b.ef.persist == nil {
		t.Fatal("default cache not used")
	}
}

// TestLibcPersistedSameAnswers: the system libc with its separate debug
// file answers the same on 3,000 random text addresses with the cache
// disabled, cold and warm.
func TestLibcPersistedSameAnswers(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	ref, err := Open(libc, &Options{NoPersistentCache: true})
	if err != nil {
		t.Skipf("no libc at %s: %v", libc, err)
	}
	defer ref.Close()
	if ref.debug == nil || ref.debug.persist != nil {
		t.Skip("libc's separate debug file is not installed (libc6-dbg)")
	}
	text := ref.ELF().Section(".text")
	if text == nil {
		t.Fatal("libc has no .text")
	}
	rng := rand.New(rand.NewSource(1))
	addrs := make([]uint64, 3000)
	for i := range addrs {
		addrs[i] = text.Addr + uint64(rng.Int63n(int64(text.Size)))
	}
	cache := &pcache.Cache{Dir: filepath.Join(t.TempDir(), "pc")}
	for _, phase := range []string{"cold", "warm"} {
		b := openWith(t, libc, &Options{PersistentCache: cache})
		if b.debug == nil || b.debug.persist == nil {
			t.Fatalf("%s: libc's debug file does not use the cache", phase)
		}
		for _, a := range addrs {
			w, err1 := ref.Lookup(a)
			g, err2 := b.Lookup(a)
			if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(w, g) {
				t.Fatalf("%s: %#x: got %+v %v, want %+v %v", phase, a, g, err2, w, err1)
			}
		}
		persisted(b)
		if p := b.debug.persist; (phase == "warm") != p.loaded {
			t.Fatalf("%s: loaded from cache = %v (%v)", phase, p.loaded, p.err)
		}
	}
}

// BenchmarkLibcOpenAndLookup: Open libc (with its separate debug file) and
// look up one address in each of 8 functions a blocked thread sits in, as a
// cold `sonde stack` does: with the persisted cache disabled (inflating) and
// warm (mapping the cache file).
func BenchmarkLibcOpenAndLookup(b *testing.B) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	ref, err := Open(libc, &Options{NoPersistentCache: true})
	if err != nil {
		b.Skipf("no libc: %v", err)
	}
	if ref.debug == nil {
		b.Skip("libc's separate debug file is not installed")
	}
	syms, err := ref.Symbols()
	if err != nil {
		b.Fatal(err)
	}
	var addrs []uint64
	for _, name := range []string{"__clock_nanosleep", "__futex_abstimed_wait_common", "__libc_read", "__poll", "__sigtimedwait", "__select", "__libc_pause", "start_thread"} {
		if s := syms.ByName(name); len(s) > 0 {
			addrs = append(addrs, s[0].Addr+4)
		}
	}
	ref.Close()
	if len(addrs) == 0 {
		b.Skip("none of the functions found in libc's symbols")
	}
	cache := &pcache.Cache{Dir: filepath.Join(b.TempDir(), "pc")}
	for _, bc := range []struct {
		name string
		opts *Options
	}{{"nocache", &Options{NoPersistentCache: true}}, {"pcache-warm", &Options{PersistentCache: cache}}} {
		if bc.opts.PersistentCache != nil {
			w, err := Open(libc, bc.opts) // fill the cache
			if err != nil {
				b.Fatal(err)
			}
			w.Lookup(addrs[0])
			w.Close()
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bin, err := Open(libc, bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				for _, a := range addrs {
					if _, err := bin.Lookup(a); err != nil {
						b.Fatal(err)
					}
				}
				bin.Close()
			}
		})
	}
}

// TestConcurrentColdOpens: several Binaries of one file filling an empty
// cache at the same time (each takes the cache directory's lock through its
// own descriptor, as separate processes do) all answer right, and leave one
// valid cache file with the sections and the index.
func TestConcurrentColdOpens(t *testing.T) {
	persistEverything(t)
	plain, compressed := compressedProgram(t)
	addrs := codeAddresses(t, plain)
	want := openWith(t, plain, &Options{NoPersistentCache: true})
	cache := &pcache.Cache{Dir: filepath.Join(t.TempDir(), "pc")}
	const n = 6
	bins := make([]*Binary, n)
	errs := make(chan error, n)
	for i := range bins {
		go func() {
			b, err := Open(compressed, &Options{PersistentCache: cache})
			if err == nil {
				bins[i] = b
				_, err = b.Lookup(addrs[i*len(addrs)/n])
			}
			errs <- err
		}()
	}
	for range bins {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range bins {
		t.Cleanup(func() { b.Close() })
		compareAll(t, want, b, addrs)
		persisted(b)
	}
	b := openWith(t, compressed, &Options{PersistentCache: cache})
	compareAll(t, want, b, addrs)
	if p := b.ef.persist; !p.loaded || p.index == nil {
		t.Fatalf("cache not usable after concurrent fills: %v", p.err)
	}
}

// FuzzCompressedLookup: images with compressed debug sections, damaged
// anywhere, inflate lazily during lookups without panicking; a section that
// does not inflate is reported among the warnings and read as absent.
func FuzzCompressedLookup(f *testing.F) {
	plain, err := testprog.BuildE(testprog.Spec{Sources: []string{"dw_inline.c"}, Flags: []string{"-O2"}, Name: "fuzz_seed"})
	if err != nil {
		f.Fatal(err)
	}
	for _, z := range []string{"zlib", "zlib-gnu"} {
		p := filepath.Join(f.TempDir(), z)
		if out, err := exec.Command("objcopy", "--compress-debug-sections="+z, plain, p).CombinedOutput(); err != nil {
			f.Skipf("objcopy: %v %s", err, out)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint64(0x1150))
	}
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		b, err := OpenBytes("fuzz", data, &Options{NoSearch: true})
		if err != nil {
			return
		}
		defer b.Close()
		for i := uint64(0); i < 32; i += 4 {
			b.Lookup(addr + i)
		}
		b.LineAt(addr)
		b.Scopes(addr)
		b.DWARFSection(".debug_loclists")
		b.Warnings()
	})
}
