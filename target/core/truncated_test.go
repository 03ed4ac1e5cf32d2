package core

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// buildOther builds a different build of core_target (another build-id).
func buildOther(t testing.TB) string {
	return testprog.Build(t, testprog.Spec{Sources: []string{"core_target.c"}, Flags: []string{"-O2", "-DOTHER_BUILD"}, Name: "core_target_other"})
}

// testTruncated opens copies of a core cut at several points: right after the
// notes, inside the first dumped segment, at half the file, and 100 bytes
// short. Every sample whose bytes lie before the cut must still read right;
// the others read right (from a file) or fail with a MissingError, never
// wrong; and Problems names the truncated segments.
func testTruncated(t *testing.T, corePath string, samples []sample) {
	full, err := Open(corePath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	fc := Of(full)
	var notesEnd, firstLoad uint64
	for _, s := range fc.Segments() {
		if s.Type == ptNote {
			notesEnd = s.Offset + s.FileSize
		}
		if s.Type == ptLoad && s.FileSize > 0 && firstLoad == 0 {
			firstLoad = s.Offset + s.FileSize/2
		}
	}
	// coreOffset returns where the core holds [addr, addr+n), or false.
	coreOffset := func(addr uint64, n int) (uint64, bool) {
		for _, ld := range fc.layout.loads {
			if addr >= ld.Vaddr && addr+uint64(n) <= ld.Vaddr+ld.present {
				return ld.Offset + (addr - ld.Vaddr), true
			}
		}
		return 0, false
	}
	data, err := os.ReadFile(corePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []uint64{notesEnd, firstLoad, uint64(len(data)) / 2, uint64(len(data)) - 100} {
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "core")
			if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			_, c := openCore(t, path, Options{})
			truncs := 0
			for _, pr := range c.Problems() {
				if pr.Kind == ProblemTruncated {
					truncs++
				}
			}
			if truncs == 0 {
				t.Errorf("no truncation reported: %v", c.Problems())
			}
			checkMemory(t, c.Process(), samples)
			lost := 0
			for _, s := range samples {
				off, inCore := coreOffset(s.addr, len(s.want))
				buf := make([]byte, len(s.want))
				_, err := c.Process().ReadMemory(s.addr, buf)
				if inCore && off+uint64(len(s.want)) <= cut && err != nil {
					t.Errorf("0x%x lies at core offset %d, before the cut, but reads as %v", s.addr, off, err)
				}
				if err != nil {
					lost++
				}
			}
			if cut < uint64(len(data))/2+1 && lost == 0 {
				t.Errorf("cut at %d of %d bytes lost no sample", cut, len(data))
			}
			t.Logf("cut at %d: %d of %d samples unavailable, %d truncated segments", cut, lost, len(samples), truncs)
		})
	}
}
