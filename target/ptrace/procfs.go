package ptrace

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/target"
)

// parseMaps parses the text of /proc/PID/maps. Lines it cannot parse are an
// error naming the line; an anonymous writable mapping right after the file's
// last mapping is marked as that file's BSS.
func parseMaps(data []byte) ([]target.MemoryRegion, error) {
	var out []target.MemoryRegion
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		r, err := parseMapsLine(string(l))
		if err != nil {
			return out, fmt.Errorf("maps line %d: %w", line, err)
		}
		if n := len(out); n > 0 && r.Inode == 0 && r.FileName == "" && r.Perm&target.PermWrite != 0 {
			prev := out[n-1]
			if prev.Inode != 0 && prev.End() == r.Addr && prev.Perm&target.PermWrite != 0 {
				r.BSS = true
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func parseMapsLine(l string) (target.MemoryRegion, error) {
	var r target.MemoryRegion
	f := strings.Fields(l)
	if len(f) < 5 {
		return r, fmt.Errorf("%d fields, want at least 5: %q", len(f), l)
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return r, fmt.Errorf("address range %q has no '-'", f[0])
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end < start {
		return r, fmt.Errorf("bad address range %q", f[0])
	}
	if len(f[1]) != 4 {
		return r, fmt.Errorf("bad permissions %q", f[1])
	}
	for i, c := range f[1] {
		switch {
		case i == 0 && c == 'r':
			r.Perm |= target.PermRead
		case i == 1 && c == 'w':
			r.Perm |= target.PermWrite
		case i == 2 && c == 'x':
			r.Perm |= target.PermExec
		case i == 3 && c == 's':
			r.Perm |= target.PermShared
		case c == '-' || (i == 3 && c == 'p'):
		default:
			return r, fmt.Errorf("bad permissions %q", f[1])
		}
	}
	off, err := strconv.ParseUint(f[2], 16, 64)
	if err != nil {
		return r, fmt.Errorf("bad offset %q", f[2])
	}
	maj, min, ok := strings.Cut(f[3], ":")
	dmaj, err1 := strconv.ParseUint(maj, 16, 32)
	dmin, err2 := strconv.ParseUint(min, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return r, fmt.Errorf("bad device %q", f[3])
	}
	ino, err := strconv.ParseUint(f[4], 10, 64)
	if err != nil {
		return r, fmt.Errorf("bad inode %q", f[4])
	}
	r.Addr, r.Size, r.Offset = start, end-start, off
	r.DevMajor, r.DevMinor, r.Inode = uint32(dmaj), uint32(dmin), ino
	if len(f) > 5 {
		// The name is everything after the inode; it may contain spaces.
		rest := l
		for i := 0; i < 5; i++ {
			rest = strings.TrimLeft(rest, " \t")
			rest = rest[strings.IndexAny(rest+" ", " \t"):]
		}
		r.FileName = strings.TrimLeft(rest, " \t")
	}
	return r, nil
}

// procStatus is what sonde reads from /proc/PID/status.
type procStatus struct {
	Name      string
	State     byte // R, S, D, T (stopped), t (traced), Z, X
	Tgid      int
	TracerPid int
}

func parseStatus(data []byte) (procStatus, error) {
	var s procStatus
	seen := 0
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		var err error
		switch k {
		case "Name":
			s.Name = v
			seen |= 1
		case "State":
			if v == "" {
				return s, fmt.Errorf("status: empty State")
			}
			s.State = v[0]
			seen |= 2
		case "Tgid":
			s.Tgid, err = strconv.Atoi(v)
			seen |= 4
		case "TracerPid":
			s.TracerPid, err = strconv.Atoi(v)
			seen |= 8
		}
		if err != nil {
			return s, fmt.Errorf("status: %s: %w", k, err)
		}
	}
	if seen != 15 {
		return s, fmt.Errorf("status: missing fields (have mask %x)", seen)
	}
	return s, nil
}

func readStatus(tid int) (procStatus, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return procStatus{}, err
	}
	return parseStatus(data)
}

// taskIDs lists the threads of a process.
func taskIDs(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, n)
		}
	}
	sort.Ints(tids)
	return tids, nil
}

// threadName reads a thread's comm (its name as ps shows it).
func threadName(pid, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }

// taskState returns the state letter of a thread from /proc/TID/stat, or 0.
func taskState(tid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0
	}
	// The state follows the command name, which is in parentheses and may
	// contain anything: find the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}
