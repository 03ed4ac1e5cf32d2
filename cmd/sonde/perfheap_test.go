package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestPrepareHeapAdvisesHugePages: for a large recording, the heap the run
// allocates in after prepareHeap is in a mapping advised MADV_HUGEPAGE
// (smaps' VmFlags "hg"), and what is allocated there reads back intact. It
// runs in a fresh process, whose heap is as small as sonde's at the start
// (the test binary's, after other tests, has free stretches of its own
// below the advised one).
func TestPrepareHeapAdvisesHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("kernel without transparent huge pages: madvise(MADV_HUGEPAGE) is refused")
	}
	if os.Getenv("SONDE_TEST_HUGEHEAP_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPrepareHeapAdvisesHugePages$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "SONDE_TEST_HUGEHEAP_CHILD=1", "GOGC=", "SONDE_PERF_SMALLPAGES=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestPrepareHeapAdvisesHugePages") {
			t.Fatalf("the test in a fresh process: %v\n%s", err, out)
		}
		return
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	big := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(hugeHeapMinInput); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	prepareHeap(big)
	// Chunk-sized buffers, as a run's reads allocate; some must lie in an
	// advised mapping.
	var bufs [][]byte
	advised := 0
	for i := 0; i < 16; i++ {
		b := make([]byte, 576<<10)
		for j := range b {
			b[j] = byte(i + j)
		}
		bufs = append(bufs, b)
		if hugeAdvised(t, uintptr(unsafe.Pointer(&b[0]))) {
			advised++
		}
	}
	for i, b := range bufs {
		for j := range b {
			if b[j] != byte(i+j) {
				t.Fatalf("buffer %d byte %d: %d, want %d", i, j, b[j], byte(i+j))
			}
		}
	}
	if advised == 0 {
		t.Errorf("none of %d buffers allocated after prepareHeap is in a mapping advised MADV_HUGEPAGE", len(bufs))
	}
	runtime.KeepAlive(bufs)
}

// TestPrepareHeapSmallInput: a small recording's run leaves the heap's
// mappings as they are (the collection would cost more than it saves).
func TestPrepareHeapSmallInput(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	small := filepath.Join(t.TempDir(), "perf.data")
	if err := os.WriteFile(small, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOGC", "")
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	prepareHeap(small)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.NumForcedGC != before.NumForcedGC {
		t.Errorf("prepareHeap forced a collection for a 4 KiB recording")
	}
	if got := debug.SetGCPercent(100); got != perfGCPercent {
		t.Errorf("GC percent after prepareHeap: %d, want %d", got, perfGCPercent)
	}
}

// hugeAdvised reports whether addr lies in a mapping whose smaps VmFlags
// include "hg" (MADV_HUGEPAGE).
func hugeAdvised(t *testing.T, addr uintptr) bool {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line + " ")[0], "-"); ok && !strings.HasSuffix(lo, ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < b
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			for _, fl := range strings.Fields(line)[1:] {
				if fl == "hg" {
					return true
				}
			}
			return false
		}
	}
	return false
}
