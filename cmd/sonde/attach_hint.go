package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"github.com/sondedbg/sonde/target"
)

// attachError turns a failed attach to pid into one line that says what to
// do: for EPERM, why the kernel refused (another debugger, another user's
// process, Yama's ptrace_scope) and how to get permission; for ESRCH, that
// there is no such process.
func attachError(pid int, err error) error {
	switch errnoOf(err) {
	case syscall.ESRCH:
		return processGone(pid, err)
	case syscall.EPERM:
	default:
		return err
	}
	return fmt.Errorf("cannot attach to process %d: operation not permitted: %s", pid, permissionHint(pid))
}

// errnoOf returns the OS error number behind err, 0 if none.
func errnoOf(err error) syscall.Errno {
	var te *target.Error
	if errors.As(err, &te) && te.Errno != 0 {
		return te.Errno
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	return errno
}

// permissionHint explains an EPERM from PTRACE_SEIZE of pid, most specific
// cause first.
func permissionHint(pid int) string {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if tracer := statusField(status, "TracerPid"); tracer != "" && tracer != "0" {
		return fmt.Sprintf("it is already traced by process %s%s (a debugger or tracer; detach it first)", tracer, commName(tracer))
	}
	uid := os.Geteuid()
	capable := hasPtraceCap()
	if owner := firstField(statusField(status, "Uid"), 1); owner != "" && owner != strconv.Itoa(uid) && uid != 0 && !capable {
		return fmt.Sprintf("it belongs to %s and sonde runs as %s; run sonde as that user or as root, or give it CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep %s)",
			userName(owner), userName(strconv.Itoa(uid)), exePath())
	}
	scope := ""
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		scope = strings.TrimSpace(string(b))
	}
	switch {
	case scope == "1" && uid != 0 && !capable:
		return "kernel.yama.ptrace_scope is 1, which lets a process be attached only by its ancestors; run sonde as root or with CAP_SYS_PTRACE, or allow it with `sysctl kernel.yama.ptrace_scope=0`"
	case scope == "2" && !capable:
		return "kernel.yama.ptrace_scope is 2, which lets only processes with CAP_SYS_PTRACE attach; run sonde as root (with that capability)"
	case scope == "3":
		return "kernel.yama.ptrace_scope is 3: no process may attach to another until the next reboot"
	case uid != 0 && !capable:
		return "a process of another user, or one that is not dumpable (set-user-ID programs), needs CAP_SYS_PTRACE; run sonde as root"
	}
	return "even with CAP_SYS_PTRACE: a security module (SELinux, AppArmor) or a seccomp filter may forbid ptrace, or the process is a kernel thread"
}

// statusField returns a /proc/PID/status field's value.
func statusField(status []byte, name string) string {
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// firstField returns the i-th whitespace-separated field of s, "" if none.
func firstField(s string, i int) string {
	f := strings.Fields(s)
	if i >= len(f) {
		return ""
	}
	return f[i]
}

// hasPtraceCap reports whether sonde has CAP_SYS_PTRACE (bit 19) in its
// effective set.
func hasPtraceCap() bool {
	b, _ := os.ReadFile("/proc/self/status")
	v, err := strconv.ParseUint(statusField(b, "CapEff"), 16, 64)
	return err == nil && v&(1<<19) != 0
}

func commName(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/comm")
	if err != nil {
		return ""
	}
	return " (" + strings.TrimSpace(string(b)) + ")"
}

func userName(uid string) string {
	if u, err := user.LookupId(uid); err == nil {
		return fmt.Sprintf("user %s (uid %s)", u.Username, uid)
	}
	return "uid " + uid
}

func exePath() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "sonde"
}

// notELFError replaces an ELF parser's complaint about a file that is not ELF
// at all (`bad magic number '[35 105 110 99]'` for a C source) with what the
// user needs to hear; other errors are returned as they are.
func notELFError(path string, err error) error {
	f, oerr := os.Open(path)
	if os.IsNotExist(oerr) {
		return fmt.Errorf("%s: no such file; name the program with -e FILE", path)
	}
	if oerr != nil {
		return err
	}
	defer f.Close()
	var magic [4]byte
	if n, _ := f.Read(magic[:]); n == 4 && string(magic[:]) == "\x7fELF" {
		return err
	}
	if st, serr := f.Stat(); serr == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory, not an ELF file", path)
	}
	return fmt.Errorf("%s is not an ELF file (an executable, shared library, object or debug file)", path)
}
