package procmaps

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sample = `55ccff690000-55ccff691000 r--p 00000000 fe:00 9980137                    /tmp/tp threads (deleted)
55ccff691000-55ccff692000 r-xp 00001000 fe:00 9980137                    /tmp/tp threads (deleted)
55ccff694000-55ccff695000 rw-p 00000000 00:00 0
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 
7f1000000000-7f1000001000 rw-s 00000000 00:05 123                        /dev/zero (deleted)
7ffd1000-7ffd3000 r-xp 00000000 00:00 0                                  [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
`

func TestParse(t *testing.T) {
	for _, parse := range []func(string) ([]Mapping, error){
		func(s string) ([]Mapping, error) { return Parse([]byte(s)) },
		func(s string) ([]Mapping, error) { return Read(strings.NewReader(s)) },
	} {
		m, err := parse(sample)
		if err != nil || len(m) != 7 {
			t.Fatalf("%d mappings, %v", len(m), err)
		}
		if m[0].Name != "/tmp/tp threads (deleted)" || m[0].Inode != 9980137 || m[0].DevMajor != 0xfe || !m[0].Read || m[0].Write || m[0].Exec {
			t.Errorf("first: %+v", m[0])
		}
		if p, del := m[1].Path(); p != "/tmp/tp threads" || !del || m[1].Offset != 0x1000 || !m[1].Exec {
			t.Errorf("second: %+v: path %q %v", m[1], p, del)
		}
		if m[2].Name != "" || m[3].Name != "" {
			t.Errorf("anonymous: %q %q", m[2].Name, m[3].Name)
		}
		if !m[4].Shared || !m[4].Write || m[5].Name != "[vdso]" || m[6].Start != 0xffffffffff600000 || m[6].Read || !m[6].Exec {
			t.Errorf("perms: %+v %+v %+v", m[4], m[5], m[6])
		}
		if p, _ := m[5].Path(); p != "" {
			t.Errorf("[vdso] has path %q", p)
		}
		for _, bad := range []string{"zz-10 r--p 0 0:0 0\n", "10-20 rwxq 0 00:00 0\n", "20-10 r--p 0 00:00 0\n",
			"10-10 r--p 0 00:00 0\n", "10-20 r--p 0 0000 0\n", "10-20 r--p\n", "10-20 r 0 00:00 0 /x\n", "10-20 r--p zz 00:00 0\n",
			"10-20 r--p 0 00:00 x\n"} {
			_, err := parse("10-20 r--p 0 00:00 0\n" + bad)
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "line 2") {
				t.Errorf("%q: error %v", bad, err)
			}
		}
	}
	// The real thing parses.
	m, err := ReadPID(os.Getpid())
	if err != nil || len(m) == 0 {
		t.Fatalf("/proc/self/maps: %d mappings, %v", len(m), err)
	}
}

// TestLoadBias finds the load biases of a running PIE program (sleep) and
// of its dynamic linker from their mappings, and checks them against what
// the kernel says in the process's auxiliary vector: the executable's
// link-time entry point plus its bias is AT_ENTRY, the linker's bias is
// AT_BASE. (Go test binaries are linked without symbols, so the test does
// not use its own functions.)
func TestLoadBias(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program to run")
	}
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	exe, err := filepath.EvalSymlinks(sleep)
	if err != nil {
		t.Fatal(err)
	}
	var maps []Mapping
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		maps, err = ReadPID(pid)
		if err == nil && hasPath(maps, exe) && auxv(t, pid)[7] != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared in the maps of %d (%v)", exe, pid, err)
		}
	}
	av := auxv(t, pid)
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	progs := Progs(f)
	checked := 0
	for _, m := range maps {
		if p, _ := m.Path(); p != exe {
			continue
		}
		bias, ok := LoadBias(progs, m.Start, m.Offset)
		if !ok {
			continue
		}
		if got := f.Entry + bias; got != av[9] {
			t.Errorf("mapping %+v: bias %#x puts the entry at %#x, AT_ENTRY is %#x", m, bias, got, av[9])
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no mapping of the executable gave a bias")
	}
	interp := interpreter(t, f)
	lf, err := elf.Open(interp)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	lprogs := Progs(lf)
	checked = 0
	for _, m := range maps {
		if p, _ := m.Path(); p != interp {
			continue
		}
		if bias, ok := LoadBias(lprogs, m.Start, m.Offset); ok {
			if bias != av[7] {
				t.Errorf("%s mapping %+v: bias %#x, AT_BASE is %#x", interp, m, bias, av[7])
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatalf("no mapping of %s gave a bias", interp)
	}
	if _, ok := LoadBias(progs, 0x1000, 1<<40); ok {
		t.Error("a bias for an offset past every segment")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	if data, err := os.ReadFile("/proc/self/maps"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		r, rerr := Read(strings.NewReader(string(data)))
		for _, x := range m {
			if x.End <= x.Start {
				t.Fatalf("inverted mapping %+v", x)
			}
		}
		if (err == nil) != (rerr == nil) && len(data) < maxLine && !strings.ContainsRune(string(data), '\r') {
			t.Fatalf("Parse: %v, Read: %v", err, rerr)
		}
		if err == nil && rerr == nil && len(m) != len(r) {
			t.Fatalf("Parse %d mappings, Read %d", len(m), len(r))
		}
	})
}

func hasPath(maps []Mapping, path string) bool {
	for _, m := range maps {
		if p, _ := m.Path(); p == path {
			return true
		}
	}
	return false
}

// auxv reads a process's auxiliary vector (type -> value).
func auxv(t *testing.T, pid int) map[uint64]uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		t.Fatal(err)
	}
	v := map[uint64]uint64{}
	for ; len(b) >= 16; b = b[16:] {
		v[binary.LittleEndian.Uint64(b)] = binary.LittleEndian.Uint64(b[8:])
	}
	return v
}

// interpreter is the real path of f's PT_INTERP program.
func interpreter(t *testing.T, f *elf.File) string {
	t.Helper()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		path, err := filepath.EvalSymlinks(strings.TrimRight(string(b), "\x00"))
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Skip("the program has no interpreter")
	return ""
}

// TestLoadBiasPackedSegments: lld's layout (rustc 1.95's default), where
// the read-only segment ends and the text segment starts in one page of
// the file. The text mapping starts at that page: its bias comes from the
// text segment (vaddr-offset 0x1000), not the read-only one (0).
func TestLoadBiasPackedSegments(t *testing.T) {
	progs := []elf.ProgHeader{
		{Type: elf.PT_PHDR, Off: 0x40, Vaddr: 0x40, Filesz: 0x2a0},
		{Type: elf.PT_LOAD, Off: 0, Vaddr: 0, Filesz: 0x13a5c, Flags: elf.PF_R},
		{Type: elf.PT_LOAD, Off: 0x13a60, Vaddr: 0x14a60, Filesz: 0x3e600, Flags: elf.PF_R | elf.PF_X},
		{Type: elf.PT_LOAD, Off: 0x52060, Vaddr: 0x54060, Filesz: 0x2908, Flags: elf.PF_R | elf.PF_W},
	}
	const base = 0x557eb0bcc000
	for _, c := range []struct{ addr, offset uint64 }{
		{base, 0},                 // r--p, the read-only segment
		{base + 0x14000, 0x13000}, // r-xp, the text segment from its page
		{base + 0x20000, 0x1f000}, // the text segment split by mprotect
		{base + 0x54000, 0x52000}, // rw-p
	} {
		if bias, ok := LoadBias(progs, c.addr, c.offset); !ok || bias != base {
			t.Errorf("mapping at %#x from offset %#x: bias %#x, %v; want %#x", c.addr, c.offset, bias, ok, uint64(base))
		}
	}
}
