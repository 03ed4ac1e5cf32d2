package memimage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// liveMapping is one line of /proc/PID/smaps that matters here.
type liveMapping struct {
	start, end, offset uint64
	perms, path        string
	anonymous          uint64 // kB of the mapping that no longer match the file
}

func readSmaps(t *testing.T, pid int) []liveMapping {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []liveMapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && len(fields[1]) == 4 {
			var m liveMapping
			lo, hi, _ := strings.Cut(fields[0], "-")
			m.start, _ = strconv.ParseUint(lo, 16, 64)
			m.end, _ = strconv.ParseUint(hi, 16, 64)
			m.offset, _ = strconv.ParseUint(fields[2], 16, 64)
			m.perms = fields[1]
			if len(fields) >= 6 {
				m.path = fields[5]
			}
			out = append(out, m)
		} else if len(fields) == 3 && fields[0] == "Anonymous:" && len(out) > 0 {
			out[len(out)-1].anonymous, _ = strconv.ParseUint(fields[1], 10, 64)
		}
	}
	return out
}

// TestLiveProcess builds the image the live backend will build — the files
// mapped by a real process as sections, /proc/PID/mem as the fallback — and
// checks 1,000 random addresses, through the image and through a Reader,
// against /proc/PID/mem. Then it plants breakpoint bytes the way sonde does
// and checks that the image (and the Reader) shows the original bytes while
// the process memory holds 0xcc.
func TestLiveProcess(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary to use as a target:", err)
	}
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid

	// Wait until the exec is done, the C library is mapped and the process
	// has settled: the dynamic loader still maps /etc/ld.so.cache while it
	// maps libc and unmaps it afterwards, and a snapshot taken in between
	// saw other bytes at the cache's addresses later (failed once in CI).
	// Settled: asleep, and the same mappings twice 20 ms apart.
	var maps []liveMapping
	for deadline := time.Now().Add(10 * time.Second); ; {
		maps = readSmaps(t, pid)
		libc := false
		for _, m := range maps {
			libc = libc || strings.Contains(m.path, "libc")
		}
		if libc && processState(pid) == 'S' {
			time.Sleep(20 * time.Millisecond)
			again := readSmaps(t, pid)
			if sameMappings(maps, again) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("target never settled with its C library mapped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR, 0)
	if err != nil {
		t.Skip("cannot open the target's memory (no ptrace permission?):", err)
	}
	defer mem.Close()
	procRead := func(p []byte, asid ASID, addr uint64) (int, error) {
		if addr > 1<<63-1 {
			return 0, &UnmappedError{ASID: asid, Addr: addr}
		}
		n, err := mem.ReadAt(p, int64(addr))
		if n > 0 {
			return n, nil
		}
		if errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EFAULT) {
			return 0, &UnmappedError{ASID: asid, Addr: addr}
		}
		return 0, err
	}

	asid := ASID{Space: uint64(pid), Generation: 1}
	c := NewSectionCache(NoLimit)
	im := New("live")
	im.SetFallback(procRead)
	sections := 0
	var readable []liveMapping
	for _, m := range maps {
		if m.perms[0] != 'r' || m.path == "[vsyscall]" || m.path == "[vvar]" || m.path == "[vvar_vclock]" {
			continue
		}
		readable = append(readable, m)
		// A file mapping is a section only while it still holds the file's
		// bytes: not writable, and no page copied on write (RELRO pages were
		// written by the dynamic loader before they became read-only).
		if !strings.HasPrefix(m.path, "/") || m.perms[1] == 'w' || m.anonymous != 0 {
			continue
		}
		id, err := c.AddFile(m.path, m.offset, m.end-m.start, m.start)
		if err != nil {
			t.Fatal(err)
		}
		if err := im.AddCached(c, id, asid); err != nil {
			t.Fatal(err)
		}
		sections++
	}
	if sections < 3 {
		t.Fatalf("only %d file sections in %+v", sections, maps)
	}

	rng := rand.New(rand.NewPCG(1, uint64(pid)))
	fromSections := 0
	rd := im.NewReader(asid)
	for i := range 1000 {
		m := readable[rng.IntN(len(readable))]
		addr := m.start + rng.Uint64N(m.end-m.start)
		want := make([]byte, 16)
		wn, _ := mem.ReadAt(want, int64(addr))
		for _, how := range []string{"image", "reader"} {
			got := make([]byte, 16)
			var n int
			var err error
			if how == "image" {
				n, err = im.ReadFull(got, asid, addr)
			} else {
				n, err = rd.ReadFull(got, addr)
			}
			if n != wn || !bytes.Equal(got[:n], want[:wn]) {
				t.Fatalf("at %#x (%s %s): %s % x (%v), /proc/pid/mem % x", addr, m.perms, m.path, how, got[:n], err, want[:wn])
			}
		}
		if i%2 == 1 {
			// The Reader again, a few bytes on: served from its window.
			got := make([]byte, 8)
			n, err := rd.ReadFull(got, addr+3)
			wn, _ := mem.ReadAt(want[:8], int64(addr+3))
			if n != wn || !bytes.Equal(got[:n], want[:wn]) {
				t.Fatalf("at %#x: reader % x (%v), /proc/pid/mem % x", addr+3, got[:n], err, want[:wn])
			}
		}
		if _, id, _ := im.Read(want[:1], asid, addr); id != 0 {
			fromSections++
		}
	}
	t.Logf("%d file sections; %d of 1000 addresses served by sections", sections, fromSections)
	if fromSections == 0 {
		t.Error("no address was served by a section")
	}

	// Plant breakpoints: one in a file section (text), one where only the
	// fallback serves (the stack).
	var text, stack liveMapping
	for _, m := range maps {
		if m.perms == "r-xp" && m.path == sleep && text.end == 0 {
			text = m
		}
		if m.path == "[stack]" {
			stack = m
		}
	}
	if text.end == 0 || stack.end == 0 {
		t.Fatalf("no text or stack mapping in %+v", maps)
	}
	for _, addr := range []uint64{text.start + 0x40, stack.start + 0x10} {
		orig := make([]byte, 1)
		if _, err := mem.ReadAt(orig, int64(addr)); err != nil {
			t.Fatal(err)
		}
		if orig[0] == 0xcc {
			t.Fatalf("byte at %#x is already 0xcc; pick another", addr)
		}
		if err := im.SetOriginal(asid, addr, orig); err != nil {
			t.Fatal(err)
		}
		if _, err := mem.WriteAt([]byte{0xcc}, int64(addr)); err != nil {
			t.Fatal(err)
		}
		got, now, viaReader := make([]byte, 3), make([]byte, 3), make([]byte, 3)
		if _, err := im.ReadFull(got, asid, addr-1); err != nil {
			t.Fatal(err)
		}
		if _, err := rd.ReadFull(viaReader, addr-1); err != nil {
			t.Fatal(err)
		}
		mem.ReadAt(now, int64(addr-1))
		if got[1] != orig[0] || now[1] != 0xcc || got[0] != now[0] || got[2] != now[2] || !bytes.Equal(viaReader, got) {
			t.Errorf("breakpoint at %#x: image % x, reader % x, process % x, original %#x", addr, got, viaReader, now, orig[0])
		}
		if err := im.ClearOriginal(asid, addr, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := im.ReadFull(got, asid, addr-1); err != nil {
			t.Fatal(err)
		}
		// After the overlay is cleared, a fallback read shows the patch;
		// a section read still shows the file.
		wantMid := byte(0xcc)
		if addr == text.start+0x40 {
			wantMid = orig[0]
		}
		if got[1] != wantMid {
			t.Errorf("after ClearOriginal at %#x: image shows %#x, want %#x", addr, got[1], wantMid)
		}
	}
}

// processState is the state letter of /proc/PID/stat (0 if unreadable).
func processState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces and parentheses: the state follows
	// the last ')'.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2]
	}
	return 0
}

// sameMappings reports whether two snapshots list the same mappings.
func sameMappings(a, b []liveMapping) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].start != b[i].start || a[i].end != b[i].end || a[i].offset != b[i].offset ||
			a[i].perms != b[i].perms || a[i].path != b[i].path {
			return false
		}
	}
	return true
}
