package ptrace

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

const sampleMaps = `55ccff690000-55ccff691000 r--p 00000000 fe:00 9980137                    /tmp/tp threads (deleted)
55ccff694000-55ccff695000 rw-p 00003000 fe:00 9980137                    /tmp/tp threads (deleted)
55ccff695000-55ccff697000 rw-p 00000000 00:00 0 
7febd7553000-7febd7557000 r--p 00000000 00:00 0                          [vvar]
7ffcaebb5000-7ffcaebd6000 rw-s 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
`

func TestParseMaps(t *testing.T) {
	m, err := parseMaps([]byte(sampleMaps))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 6 {
		t.Fatalf("%d regions", len(m))
	}
	if m[0].FileName != "/tmp/tp threads (deleted)" || m[0].Inode != 9980137 || m[0].DevMajor != 0xfe || m[0].Perm != target.PermRead {
		t.Fatalf("first: %+v", m[0])
	}
	if !m[2].BSS || m[1].BSS || m[2].FileName != "" {
		t.Fatalf("bss: %+v %+v", m[1], m[2])
	}
	if m[4].Perm != target.PermRead|target.PermWrite|target.PermShared || m[5].Addr != 0xffffffffff600000 || m[5].Perm != target.PermExec {
		t.Fatalf("perms: %v %v", m[4].Perm, m[5].Perm)
	}
	for _, bad := range []string{"zz-10 r--p 0 0:0 0\n", "10-20 rwxq 0 00:00 0\n", "20-10 r--p 0 00:00 0\n", "10-20 r--p 0 0000 0\n", "10-20 r--p\n"} {
		if _, err := parseMaps([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
	// The real thing parses.
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := parseMaps(data); err != nil || len(m) == 0 {
		t.Fatalf("/proc/self/maps: %v", err)
	}
}

func TestParseStatus(t *testing.T) {
	runtime.LockOSThread() // the running thread is the one in state R
	defer runtime.UnlockOSThread()
	data, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	st, err := parseStatus(data)
	if err != nil || st.Tgid != os.Getpid() || st.TracerPid != 0 || st.State != 'R' {
		t.Fatalf("%+v %v", st, err)
	}
	if _, err := parseStatus([]byte("Name:\tx\nState:\tS\nTgid:\tzz\nTracerPid:\t0\n")); err == nil {
		t.Fatal("bad Tgid accepted")
	}
	if _, err := parseStatus([]byte("Name:\tx\n")); err == nil {
		t.Fatal("missing fields accepted")
	}
	if s := taskState(unix.Gettid()); s != 'R' {
		t.Fatalf("taskState(self) = %c", s)
	}
}

func TestDecodeSiginfo(t *testing.T) {
	raw := make([]byte, 128)
	raw[0] = 11 // SIGSEGV
	raw[8] = 1  // SEGV_MAPERR
	raw[16] = 0x10
	si := decodeSiginfo(raw)
	if si.Signo != 11 || si.Code != 1 || si.Addr != 0x10 || si.fromUser() || !strings.Contains(si.faultText(), "address not mapped at 0x10") {
		t.Fatalf("%+v %s", si, si.faultText())
	}
	raw[0], raw[8], raw[9], raw[10], raw[11] = 10, 0xfa, 0xff, 0xff, 0xff // SIGUSR1, SI_TKILL
	raw[16], raw[17] = 0x39, 0x30                                         // pid 12345
	si = decodeSiginfo(raw)
	if !si.fromUser() || si.Pid != 12345 || si.Code != siTkill {
		t.Fatalf("%+v", si)
	}
	if si := decodeSiginfo(nil); si.Signo != 0 {
		t.Fatal("empty siginfo")
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add([]byte(sampleMaps))
	f.Add([]byte("0-0 ---p 0 0:0 0"))
	f.Add([]byte("10-20 r-xp 00001000 fe:00 12 /a b  c\n\n30-40 rw-p 0 0:0 0\n"))
	if data, err := os.ReadFile("/proc/self/maps"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMaps(data)
		for _, r := range m {
			if r.End() < r.Addr {
				t.Fatalf("region ends before it starts: %+v", r)
			}
		}
		_ = err
	})
}

func FuzzParseStatus(f *testing.F) {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("Name:\tx\nState:\t\nTgid:\t1\nTracerPid:\t0\n"))
	f.Add([]byte("Name:\tx\nState:\tS\nTgid:\t1\nTracerPid:\t0\nSigIgn:\t0000000000001000\nSigCgt:\tfffffffffffffffff\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseStatus(data)
		if err == nil && st.State == 0 {
			t.Fatal("no state but no error")
		}
	})
}

func FuzzDecodeSiginfo(f *testing.F) {
	f.Add(make([]byte, 128))
	f.Add([]byte{5, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		si := decodeSiginfo(data)
		_ = si.faultText()
	})
}
