package symbols

import (
	"hash/adler32"
	"math/rand"
	"testing"
)

// TestAdler32MatchesStdlib: every length up to a few blocks, random bytes
// and runs of 0xff (the largest sums), against hash/adler32.
func TestAdler32MatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	buf := make([]byte, 3<<16+77)
	rng.Read(buf)
	ff := make([]byte, len(buf))
	for i := range ff {
		ff[i] = 0xff
	}
	for _, data := range [][]byte{buf, ff} {
		for n := 0; n < len(data); n += 1 + n/7 {
			if got, want := adlerSum(data[:n]), adler32.Checksum(data[:n]); got != want {
				t.Fatalf("%d bytes: %#x, want %#x", n, got, want)
			}
		}
		if got, want := adlerSum(data), adler32.Checksum(data); got != want {
			t.Fatalf("%d bytes: %#x, want %#x", len(data), got, want)
		}
	}
}

// FuzzAdler32: any bytes, against hash/adler32.
func FuzzAdler32(f *testing.F) {
	f.Add([]byte("sonde"))
	f.Add(make([]byte, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := adlerSum(data), adler32.Checksum(data); got != want {
			t.Fatalf("%#x, want %#x", got, want)
		}
	})
}

func BenchmarkAdler32(b *testing.B) {
	buf := make([]byte, 8<<20)
	rand.New(rand.NewSource(1)).Read(buf)
	b.Run("sonde", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			adlerSum(buf)
		}
	})
	b.Run("stdlib", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			adler32.Checksum(buf)
		}
	})
}
