package ptrace

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/procmaps"
	"github.com/sondedbg/sonde/target"
)

// parseMaps parses the text of /proc/PID/maps (package procmaps). Lines it
// cannot parse are an error naming the line; an anonymous writable mapping
// right after the file's last mapping is marked as that file's BSS.
func parseMaps(data []byte) ([]target.MemoryRegion, error) {
	maps, err := procmaps.Parse(data)
	out := make([]target.MemoryRegion, 0, len(maps))
	for _, m := range maps {
		r := target.MemoryRegion{Addr: m.Start, Size: m.End - m.Start, Offset: m.Offset,
			DevMajor: m.DevMajor, DevMinor: m.DevMinor, Inode: m.Inode, FileName: m.Name}
		for _, p := range []struct {
			on   bool
			perm target.Perm
		}{{m.Read, target.PermRead}, {m.Write, target.PermWrite}, {m.Exec, target.PermExec}, {m.Shared, target.PermShared}} {
			if p.on {
				r.Perm |= p.perm
			}
		}
		if n := len(out); n > 0 && r.Inode == 0 && r.FileName == "" && r.Perm&target.PermWrite != 0 {
			prev := out[n-1]
			if prev.Inode != 0 && prev.End() == r.Addr && prev.Perm&target.PermWrite != 0 {
				r.BSS = true
			}
		}
		out = append(out, r)
	}
	return out, err
}

// procStatus is what sonde reads from /proc/PID/status.
type procStatus struct {
	Name      string
	State     byte // R, S, D, T (stopped), t (traced), Z, X
	Tgid      int
	TracerPid int
	// SigCgt and SigIgn are the process's caught and ignored signal sets
	// (bit n-1 for signal n, the kernel's encoding and target.SignalSet's);
	// HasSigMasks says the file had both lines.
	SigCgt, SigIgn uint64
	HasSigMasks    bool
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
		case "SigCgt":
			s.SigCgt, err = strconv.ParseUint(v, 16, 64)
			seen |= 16
		case "SigIgn":
			s.SigIgn, err = strconv.ParseUint(v, 16, 64)
			seen |= 32
		}
		if err != nil {
			return s, fmt.Errorf("status: %s: %w", k, err)
		}
	}
	if seen&15 != 15 {
		return s, fmt.Errorf("status: missing fields (have mask %x)", seen)
	}
	s.HasSigMasks = seen&48 == 48
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
