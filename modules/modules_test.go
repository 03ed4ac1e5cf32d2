package modules

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
)

// procfs reads a running process through /proc (no ptrace needed as root): a
// real process, read the way a debugger would.
type procfs struct{ pid int }

func (p procfs) ReadMemory(addr uint64, b []byte) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", p.pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(b, int64(addr))
}

func (p procfs) Auxv() ([]byte, error) { return os.ReadFile(fmt.Sprintf("/proc/%d/auxv", p.pid)) }

func (p procfs) MemoryMap() ([]target.MemoryRegion, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.pid))
	if err != nil {
		return nil, err
	}
	var out []target.MemoryRegion
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		lo, hi, _ := strings.Cut(f[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		b, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		ino, _ := strconv.ParseUint(f[4], 10, 64)
		r := target.MemoryRegion{Addr: a, Size: b - a, Offset: off, Inode: ino}
		if len(f) > 5 {
			r.FileName = strings.Join(f[5:], " ")
		}
		if f[1][0] == 'r' {
			r.Perm |= target.PermRead
		}
		if f[1][2] == 'x' {
			r.Perm |= target.PermExec
		}
		out = append(out, r)
	}
	return out, nil
}

func startDlopen(t *testing.T, flags ...string) (*exec.Cmd, *bufio.Reader, string) {
	t.Helper()
	lib := testprog.Build(t, testprog.Spec{Sources: []string{"mod_lib.c"}, Flags: []string{"-shared", "-fPIC", "-O2"}, Name: "libmodtest.so"})
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"mod_dlopen.c"}, Flags: append([]string{"-ldl"}, flags...)})
	cmd := exec.Command(prog, lib)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil || line != "ready 45\n" {
		t.Fatalf("program said %q, %v", line, err)
	}
	return cmd, r, lib
}

// checkBias verifies a module's bias: the bytes of every defined function symbol
// in target memory equal the file's bytes at that symbol.
func checkBias(t *testing.T, p Process, m *Module, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	checked := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Size < 8 || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		want := make([]byte, 8)
		if _, err := sec.ReadAt(want, int64(s.Value-sec.Addr)); err != nil {
			continue
		}
		got := make([]byte, 8)
		if n, _ := p.ReadMemory(s.Value+m.Bias, got); n != 8 || !bytes.Equal(got, want) {
			t.Errorf("%s: %s at 0x%x: memory % x, file % x", m.Name, s.Name, s.Value+m.Bias, got, want)
		}
		if checked++; checked > 20 {
			break
		}
	}
	if checked == 0 {
		t.Errorf("%s: no symbol to check the bias with", m.Name)
	}
}

func TestFindLiveModules(t *testing.T) {
	for _, pie := range []string{"-pie", "-no-pie"} {
		t.Run(pie, func(t *testing.T) {
			cmd, _, lib := startDlopen(t, pie)
			p := procfs{cmd.Process.Pid}
			mods, err := Find(p)
			if err != nil {
				t.Fatal(err)
			}
			var sawLib, sawLibc, sawVDSO bool
			for _, m := range mods {
				switch {
				case m.VDSO:
					sawVDSO = true
					if len(m.Image) == 0 {
						t.Error("vDSO image not read")
					}
				case m.Path == lib:
					sawLib = true
					checkBias(t, p, m, lib)
				case strings.Contains(m.Name, "libc.so"):
					sawLibc = true
					checkBias(t, p, m, m.Path)
				}
			}
			main := mods.Main()
			if main == nil || main.Path != cmd.Path {
				t.Fatalf("main module %v, want %s", main, cmd.Path)
			}
			if pie == "-no-pie" && main.Bias != 0 {
				t.Errorf("non-PIE executable has bias 0x%x", main.Bias)
			}
			if pie == "-pie" && main.Bias == 0 {
				t.Error("PIE executable has no bias")
			}
			if !sawLib || !sawLibc || !sawVDSO || mods.Interpreter() == nil {
				t.Errorf("missing modules: lib %v libc %v vdso %v interp %v in %v", sawLib, sawLibc, sawVDSO, mods.Interpreter(), mods)
			}
			rd, err := FindRDebug(p, main)
			if err != nil || rd == nil || rd.Brk == 0 {
				t.Fatalf("r_debug: %+v %v", rd, err)
			}
			entries, err := LinkMap(p, rd.Map)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range entries {
				found = found || e.Name == lib
			}
			if !found {
				t.Errorf("link map %+v lacks %s", entries, lib)
			}
			if mm := mods.ForAddress(main.Start); mm != main {
				t.Errorf("ForAddress(main start) = %v", mm)
			}
		})
	}
}

// corrupt is a process whose memory is garbage: Find and LinkMap must end with
// errors or partial results, never hang.
type corrupt struct{ procfs }

func (c corrupt) ReadMemory(addr uint64, b []byte) (int, error) {
	for i := range b {
		b[i] = byte(addr) + byte(i)
	}
	return len(b), nil
}

func TestCorruptLinkMapEnds(t *testing.T) {
	cmd, _, _ := startDlopen(t)
	c := corrupt{procfs{cmd.Process.Pid}}
	if _, err := LinkMap(c, 0x1000); err == nil {
		t.Error("a garbage link map walk reported no error")
	}
	Find(c) // must return
}
