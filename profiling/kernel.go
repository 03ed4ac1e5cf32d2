package profiling

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// KernelSymbols names kernel addresses from a kallsyms listing.
type KernelSymbols struct {
	addrs []uint64
	names []string
}

// maxKallsyms bounds the listing read (a kernel has a few hundred thousand symbols).
const maxKallsyms = 4 << 20

// ReadKallsyms parses a /proc/kallsyms-style listing ("ADDR TYPE NAME
// [MODULE]"), keeping text symbols. Malformed lines are skipped.
func ReadKallsyms(r io.Reader) (*KernelSymbols, error) {
	k := &KernelSymbols{}
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096)
	for sc.Scan() && len(syms) < maxKallsyms {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || len(f[1]) != 1 || !strings.ContainsAny(f[1], "tTwW") {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || a == 0 {
			continue
		}
		syms = append(syms, sym{a, f[2]})
	}
	if err := sc.Err(); err != nil && err != bufio.ErrTooLong {
		return nil, err
	}
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	for _, s := range syms {
		k.addrs = append(k.addrs, s.addr)
		k.names = append(k.names, s.name)
	}
	return k, nil
}

// Lookup names the function containing addr ("" when it precedes every symbol).
func (k *KernelSymbols) Lookup(addr uint64) string {
	if k == nil {
		return ""
	}
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > addr }) - 1
	if i < 0 {
		return ""
	}
	return k.names[i]
}

// RunningKernel returns the running kernel's symbols when the recording was
// made on it (its build-id equals the recording's [kernel.kallsyms] entry);
// nil otherwise, or when kallsyms shows no addresses (not root).
func RunningKernel(recordedBuildID []byte) *KernelSymbols {
	if len(recordedBuildID) == 0 {
		return nil
	}
	notes, err := os.ReadFile("/sys/kernel/notes")
	if err != nil || !bytes.Contains(notes, recordedBuildID) {
		return nil
	}
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil
	}
	defer f.Close()
	k, err := ReadKallsyms(f)
	if err != nil || len(k.addrs) == 0 {
		return nil
	}
	return k
}

// kernelFrame names one kernel callchain entry.
func (b *Builder) kernelFrame(ip uint64) Frame {
	return Frame{PC: ip, Function: b.opts.Kernel.Lookup(ip), Module: "[kernel.kallsyms]", Kernel: true}
}

// hexID formats a build-id.
func hexID(b []byte) string { return hex.EncodeToString(b) }
