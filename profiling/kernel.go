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
	// The names, one after the other in one string: name i is
	// text[ends[i-1]:ends[i]] (a few MiB in two allocations, not 200k
	// strings to make and for the collector to trace).
	text string
	ends []uint32
}

// name returns symbol i's name.
func (k *KernelSymbols) name(i int) string {
	start := uint32(0)
	if i > 0 {
		start = k.ends[i-1]
	}
	return k.text[start:k.ends[i]]
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
	var addrs []uint64
	var names []string // slices of text, gathered into one string below
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
		if n := len(addrs); n > 0 && a < addrs[n-1] {
			sorted = false
		}
		addrs = append(addrs, a)
		names = append(names, name)
	}
	idx := make([]int, len(addrs))
	for i := range idx {
		idx[i] = i
	}
	if !sorted {
		sort.SliceStable(idx, func(i, j int) bool { return addrs[idx[i]] < addrs[idx[j]] })
	}
	k := &KernelSymbols{addrs: make([]uint64, len(idx)), ends: make([]uint32, len(idx))}
	var sb strings.Builder
	for i, j := range idx {
		k.addrs[i] = addrs[j]
		sb.WriteString(names[j])
		k.ends[i] = uint32(sb.Len())
	}
	k.text = sb.String()
	return k, nil
}

// Lookup names the function containing addr ("" when it precedes every symbol).
func (k *KernelSymbols) Lookup(addr uint64) string {
	name, _, _ := k.lookup(addr)
	return name
}

// lookup names the function containing addr and addr's offset in it.
func (k *KernelSymbols) lookup(addr uint64) (string, uint64, bool) {
	if k == nil {
		return "", 0, false
	}
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > addr }) - 1
	if i < 0 {
		return "", 0, false
	}
	return k.name(i), addr - k.addrs[i], true
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
	k := b.opts.Kernel
	if k == nil && b.kernelSyms != nil {
		k = b.kernelSyms()
	}
	f := Frame{PC: ip, Module: "[kernel.kallsyms]", Kernel: true}
	f.Function, f.Offset, f.HasOffset = k.lookup(ip)
	return f
}

// hexID formats a build-id.
func hexID(b []byte) string { return hex.EncodeToString(b) }
