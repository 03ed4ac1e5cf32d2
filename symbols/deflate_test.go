package symbols

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"debug/elf"
	"io"
	"math/rand"
	"testing"
)

// deflateInputs are data of the shapes deflate encodes differently: empty,
// one byte, runs (overlapping copies), text, random bytes (stored blocks at
// level 0 and incompressible data otherwise), and mixtures past 64 KiB
// (several blocks, distances up to 32 KiB).
func deflateInputs() [][]byte {
	rng := rand.New(rand.NewSource(7))
	random := make([]byte, 100<<10)
	rng.Read(random)
	var mixed []byte
	words := []string{"DW_TAG_subprogram ", "nanosleep", "\x00\x00\x00", "futex-internal.c ", "x", "\x01\x02"}
	for len(mixed) < 300<<10 {
		if rng.Intn(10) == 0 {
			mixed = append(mixed, random[:rng.Intn(200)]...)
		} else {
			mixed = append(mixed, words[rng.Intn(len(words))]...)
		}
	}
	return [][]byte{
		{}, {42}, bytes.Repeat([]byte{0}, 1000), bytes.Repeat([]byte("ab"), 40000),
		[]byte("sonde reads DWARF; sonde reads DWARF again"), random[:5000], random, mixed,
	}
}

// TestInflateRawMatchesStdlib: every input at every compression level (and
// Huffman-only) decodes to itself, consuming exactly the stream.
func TestInflateRawMatchesStdlib(t *testing.T) {
	for i, data := range deflateInputs() {
		for _, level := range []int{flate.NoCompression, flate.BestSpeed, flate.DefaultCompression, flate.BestCompression, flate.HuffmanOnly} {
			var buf bytes.Buffer
			w, _ := flate.NewWriter(&buf, level)
			w.Write(data)
			w.Close()
			stream := buf.Bytes()
			out := make([]byte, len(data))
			n, err := inflateRaw(append(stream, "trailing"...), out)
			if err != nil || !bytes.Equal(out, data) || n != len(stream) {
				t.Errorf("input %d level %d: %v, used %d of %d bytes, same output %v", i, level, err, n, len(stream), bytes.Equal(out, data))
			}
			if len(data) > 0 {
				if _, err := inflateRaw(stream, make([]byte, len(data)-1)); err == nil {
					t.Errorf("input %d level %d: no error decoding into a short buffer", i, level)
				}
			}
			if _, err := inflateRaw(stream, make([]byte, len(data)+1)); err == nil {
				t.Errorf("input %d level %d: no error decoding into a long buffer", i, level)
			}
			for _, cut := range []int{0, 1, len(stream) / 2, len(stream) - 1} {
				if cut >= len(stream) {
					continue
				}
				if _, err := inflateRaw(stream[:cut], make([]byte, len(data))); err == nil && len(data) > 0 {
					t.Errorf("input %d level %d: no error for the stream cut at %d of %d", i, level, cut, len(stream))
				}
			}
		}
	}
}

// TestInflateLibcSections: every compressed section of libc's separate
// debug file (when installed) decodes to what compress/zlib makes of it.
func TestInflateLibcSections(t *testing.T) {
	path := libcDebugFile(t)
	ef, err := openELFFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.close()
	n := 0
	for _, s := range ef.f.Sections {
		if !isCompressed(s) || s.Flags&elf.SHF_COMPRESSED == 0 {
			continue
		}
		got, err := ef.inflate(s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		want, err := s.Data()
		if err != nil {
			t.Fatalf("%s: debug/elf: %v", s.Name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: differs from compress/zlib's", s.Name)
		}
		n++
	}
	t.Logf("%d sections", n)
}

// FuzzInflateZlib: any bytes as a zlib stream, against compress/zlib: where
// the standard library decodes it, the same bytes; never a panic. (Where it
// does not, the decoder may still accept a stream whose Huffman codes are
// incomplete, which zlib's own inflate also tolerates in part; the checksum
// still has to match.)
func FuzzInflateZlib(f *testing.F) {
	for _, data := range deflateInputs()[:5] {
		for _, level := range []int{flate.NoCompression, flate.BestSpeed, flate.BestCompression, flate.HuffmanOnly} {
			var buf bytes.Buffer
			w, _ := zlib.NewWriterLevel(&buf, level)
			w.Write(data)
			w.Close()
			f.Add(buf.Bytes(), uint32(len(data)))
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte, size uint32) {
		size %= 1 << 16
		out := make([]byte, size)
		err := inflateZlibInto(stream, out)
		zr, zerr := zlib.NewReader(bytes.NewReader(stream))
		if zerr != nil {
			return
		}
		want, zerr := io.ReadAll(io.LimitReader(zr, 1<<16+1))
		if zerr == nil && len(want) == int(size) {
			if err != nil || !bytes.Equal(out, want) {
				t.Fatalf("compress/zlib decodes %d bytes; sonde: %v, same %v", len(want), err, bytes.Equal(out, want))
			}
		}
		if err == nil && zerr == nil && !bytes.Equal(out, want) {
			t.Fatalf("both decode, to different bytes")
		}
	})
}
