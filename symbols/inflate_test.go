package symbols

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kzlib "github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// TestInflateMatchesStdlib: every compressed debug section of objcopy's
// zlib, zstd and .zdebug_* outputs decodes to the bytes the standard
// library's debug/elf reads (and, for SHF_COMPRESSED, to the uncompressed
// build's section).
func TestInflateMatchesStdlib(t *testing.T) {
	plainPath := build(t, "dw_inline.c", "-O2")
	plain, err := elf.Open(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	dir := t.TempDir()
	for _, z := range []string{"zlib", "zlib-gnu", "zstd"} {
		t.Run(z, func(t *testing.T) {
			p := filepath.Join(dir, z)
			run(t, "objcopy", "--compress-debug-sections="+z, plainPath, p)
			ef, err := openELFFile(p)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.close()
			n := 0
			for _, s := range ef.f.Sections {
				if !isCompressed(s) {
					continue
				}
				n++
				got, err := ef.inflate(s)
				if err != nil {
					t.Fatalf("%s: %v", s.Name, err)
				}
				var want []byte
				if strings.HasPrefix(s.Name, ".zdebug_") {
					raw := ef.data[s.Offset : s.Offset+s.Size]
					zr, err := zlib.NewReader(bytes.NewReader(raw[12:]))
					if err != nil {
						t.Fatal(err)
					}
					want, err = io.ReadAll(zr)
					if err != nil {
						t.Fatal(err)
					}
				} else {
					if want, err = s.Data(); err != nil {
						t.Fatalf("%s: debug/elf: %v", s.Name, err)
					}
					ps := plain.Section(s.Name)
					pd, _ := ps.Data()
					if !bytes.Equal(pd, want) {
						t.Fatalf("%s: debug/elf's copy differs from the uncompressed build's", s.Name)
					}
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: %d bytes, want %d (or different bytes)", s.Name, len(got), len(want))
				}
			}
			if n == 0 {
				t.Skipf("objcopy did not compress with %s", z)
			}
		})
	}
}

// chdr builds an SHF_COMPRESSED section's bytes.
func chdr(typ uint32, size uint64, body []byte) []byte {
	b := make([]byte, chdrSize, chdrSize+len(body))
	binary.LittleEndian.PutUint32(b, typ)
	binary.LittleEndian.PutUint64(b[8:], size)
	binary.LittleEndian.PutUint64(b[16:], 1)
	return append(b, body...)
}

func zlibBytes(t testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	w.Write(data)
	w.Close()
	return buf.Bytes()
}

func zstdBytes(t testing.TB, data []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(data, nil)
}

// TestDecompressSHFLies: a header whose size differs from the stream's, a
// damaged checksum, an unknown type, a truncated header: errors, never a
// short or padded section.
func TestDecompressSHFLies(t *testing.T) {
	data := bytes.Repeat([]byte("sonde debug section "), 500)
	z, zs := zlibBytes(t, data), zstdBytes(t, data)
	badSum := append([]byte(nil), z...)
	badSum[len(badSum)-1] ^= 0xff
	n := uint64(len(data))
	for _, tc := range []struct {
		name string
		raw  []byte
		ok   bool
	}{
		{"zlib exact", chdr(elfCompressZlib, n, z), true},
		{"zstd exact", chdr(elfCompressZstd, n, zs), true},
		{"zlib claims more", chdr(elfCompressZlib, n+1, z), false},
		{"zlib claims less", chdr(elfCompressZlib, n-1, z), false},
		{"zstd claims more", chdr(elfCompressZstd, n+1, zs), false},
		{"zstd claims less", chdr(elfCompressZstd, n-1, zs), false},
		{"zlib bad checksum", chdr(elfCompressZlib, n, badSum), false},
		{"zlib truncated", chdr(elfCompressZlib, n, z[:len(z)/2]), false},
		{"zstd truncated", chdr(elfCompressZstd, n, zs[:len(zs)/2]), false},
		{"unknown type", chdr(3, n, z), false},
		{"huge claim", chdr(elfCompressZlib, 1<<40, z), false},
		{"ratio lie", chdr(elfCompressZlib, 1<<30, z), false},
		{"short header", chdr(elfCompressZlib, n, z)[:10], false},
	} {
		got, err := decompressSHF(tc.raw, maxSectionSize, heapBuffer)
		switch {
		case tc.ok && (err != nil || !bytes.Equal(got, data)):
			t.Errorf("%s: %d bytes, %v; want the data", tc.name, len(got), err)
		case !tc.ok && err == nil:
			t.Errorf("%s: %d bytes and no error", tc.name, len(got))
		}
	}
	if _, err := decompressSHF(chdr(elfCompressZlib, n+1, z), maxSectionSize, heapBuffer); !errors.Is(err, errSizeMismatch) {
		t.Errorf("size lie: %v, want errSizeMismatch", err)
	}
}

// FuzzDecompressSHF: any bytes as an SHF_COMPRESSED section: an error or
// exactly the declared size, never a panic or an allocation beyond the
// stream's possible expansion.
func FuzzDecompressSHF(f *testing.F) {
	data := bytes.Repeat([]byte("abc\x00def"), 64)
	f.Add(chdr(elfCompressZlib, uint64(len(data)), zlibBytes(f, data)))
	f.Add(chdr(elfCompressZstd, uint64(len(data)), zstdBytes(f, data)))
	f.Add(chdr(elfCompressZlib, 1<<20, []byte{0x78, 0x9c, 0x03, 0x00}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := decompressSHF(raw, 16<<20, heapBuffer)
		if err == nil && uint64(len(out)) != binary.LittleEndian.Uint64(raw[8:]) {
			t.Fatalf("%d bytes, header says %d", len(out), binary.LittleEndian.Uint64(raw[8:]))
		}
	})
}

// BenchmarkInflate decodes every compressed debug section of libc's
// separate debug file (SONDE_BENCH_COMPRESSED picks another file): sonde's
// decoder against debug/elf's (compress/zlib).
func BenchmarkInflate(b *testing.B) {
	path := os.Getenv("SONDE_BENCH_COMPRESSED")
	if path == "" {
		path = libcDebugFile(b)
	}
	ef, err := openELFFile(path)
	if err != nil {
		b.Skipf("no compressed debug file: %v", err)
	}
	defer ef.close()
	var secs []*elf.Section
	var size int64
	for _, s := range ef.f.Sections {
		if isCompressed(s) && !strings.HasPrefix(s.Name, ".zdebug_") {
			secs = append(secs, s)
			size += int64(s.Size)
		}
	}
	if len(secs) == 0 {
		b.Skipf("%s has no SHF_COMPRESSED sections", path)
	}
	b.Run("sonde", func(b *testing.B) {
		b.SetBytes(size)
		cpu := startCPU()
		for b.Loop() {
			for _, s := range secs {
				if _, err := ef.inflate(s); err != nil {
					b.Fatal(err)
				}
			}
			ef.unmapBuffers()
		}
		b.ReportMetric(cpu()*1000/float64(b.N), "cpu-ms/op")
	})
	// The decoder alone: into buffers already written once (no page
	// faults), the Adler-32 check included.
	b.Run("decode", func(b *testing.B) {
		bufs := make([][]byte, len(secs))
		raws := make([][]byte, len(secs))
		for i, s := range secs {
			bufs[i] = make([]byte, s.Size)
			raws[i] = ef.data[s.Offset+chdrSize : s.Offset+s.FileSize]
		}
		b.SetBytes(size)
		cpu := startCPU()
		for b.Loop() {
			for i := range secs {
				if err := inflateZlibInto(raws[i], bufs[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(cpu()*1000/float64(b.N), "cpu-ms/op")
	})
	// klauspost's streaming inflater into the same buffers (what sonde used
	// before deflate.go).
	b.Run("klauspost", func(b *testing.B) {
		b.SetBytes(size)
		cpu := startCPU()
		for b.Loop() {
			for _, s := range secs {
				raw := ef.data[s.Offset+chdrSize : s.Offset+s.FileSize]
				zr, err := kzlib.NewReader(bytes.NewReader(raw))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(zr, ef.sectionBuffer(s.Size)); err != nil {
					b.Fatal(err)
				}
			}
			ef.unmapBuffers()
		}
		b.ReportMetric(cpu()*1000/float64(b.N), "cpu-ms/op")
	})
	b.Run("stdlib", func(b *testing.B) {
		b.SetBytes(size)
		cpu := startCPU()
		for b.Loop() {
			for _, s := range secs {
				if _, err := s.Data(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(cpu()*1000/float64(b.N), "cpu-ms/op")
	})
}

// libcDebugFile finds the separate debug file of the system's libc by its
// build-id (package libc6-dbg), or skips.
func libcDebugFile(b testing.TB) string {
	f, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Skip("no libc.so.6")
	}
	defer f.Close()
	bid := buildID(f)
	if len(bid) < 2 {
		b.Skip("libc has no build-id")
	}
	h := []byte(nil)
	for _, c := range bid {
		h = append(h, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
	}
	p := "/usr/lib/debug/.build-id/" + string(h[:2]) + "/" + string(h[2:]) + ".debug"
	if _, err := os.Stat(p); err != nil {
		b.Skipf("no libc debug file (%s): install libc6-dbg", p)
	}
	return p
}
