package profiling

import (
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
	names []string // slices of one string holding the listing
}

// maxKallsyms bounds the listing read (a kernel's is a few MiB).
const maxKallsyms = 64 << 20

// ReadKallsyms parses a /proc/kallsyms-style listing ("ADDR TYPE NAME
// [MODULE]"), keeping text symbols. Malformed lines are skipped. The
// listing is read whole and parsed in place: it has ~200k lines, and a
// profile's start-up should not pay a line scanner's allocations for them.
func ReadKallsyms(r io.Reader) (*KernelSymbols, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxKallsyms))
	if err != nil {
		return nil, err
	}
	text := string(data)
	k := &KernelSymbols{}
	sorted := true
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		sp := strings.IndexByte(line, ' ')
		if sp <= 0 || len(line) < sp+4 || line[sp+2] != ' ' {
			continue
		}
		switch line[sp+1] {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		a, err := strconv.ParseUint(line[:sp], 16, 64)
		if err != nil || a == 0 {
			continue
		}
		name := line[sp+3:]
		if i := strings.IndexAny(name, " \t"); i >= 0 {
			name = name[:i]
		}
		if name == "" {
			continue
		}
		if n := len(k.addrs); n > 0 && a < k.addrs[n-1] {
			sorted = false
		}
		k.addrs = append(k.addrs, a)
		k.names = append(k.names, name)
	}
	if !sorted {
		idx := make([]int, len(k.addrs))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return k.addrs[idx[i]] < k.addrs[idx[j]] })
		addrs, names := make([]uint64, len(idx)), make([]string, len(idx))
		for i, j := range idx {
			addrs[i], names[i] = k.addrs[j], k.names[j]
		}
		k.addrs, k.names = addrs, names
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
	return LocalKernel()
}

// LocalKernel returns the running kernel's symbols, nil when /proc/kallsyms
// hides their addresses (not root, kernel.kptr_restrict). They come from the
// persisted cache when an earlier run kept them.
func LocalKernel() *KernelSymbols { return cachedLocalKernel() }

func readLocalKernel() *KernelSymbols {
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
