package probes

import (
	"encoding/binary"
	"fmt"

	"github.com/sondedbg/sonde/target"
)

// Branches from other functions. Decoding the probed function finds every
// branch of its own; code elsewhere in the module may jump into it too
// (glibc's mempcpy jumps to memcpy's second instruction, past the first
// `mov %rdi,%rax`), and a jump into the patched range would land in the
// middle of the 5-byte jump or on the int3s after it. The module's
// executable text is scanned for the rel32 forms of jmp, call and jcc whose
// target is inside the range: a byte scan, not a decode, so it cannot miss
// one (it may see one that is not there, which only makes the site a
// breakpoint). Short (rel8) branches reach 128 bytes: the functions that
// near (Function.Neighbors, from the symbol table) are decoded and their
// branches checked exactly; code near the site that no symbol covers is the
// residual risk, as indirect branches are.

// moduleText is one executable mapping's bytes as the program sees them.
type moduleText struct {
	lo   uint64
	code []byte
}

// maxModuleText bounds the text read for the scan.
const maxModuleText = 64 << 20

// text returns the executable mappings of the module at addr, read once
// per set.
func (s *Set) text(regions []target.MemoryRegion, addr uint64) ([]moduleText, error) {
	name, _, _ := moduleOf(regions, addr)
	if name == "" {
		return nil, nil
	}
	s.mu.Lock()
	if t, ok := s.texts[name]; ok {
		s.mu.Unlock()
		return t, nil
	}
	s.mu.Unlock()
	var out []moduleText
	total := uint64(0)
	for _, r := range regions {
		if r.FileName != name || r.Perm&target.PermExec == 0 {
			continue
		}
		if total += r.Size; total > maxModuleText {
			return nil, fmt.Errorf("%s has more than %d MiB of text", name, maxModuleText>>20)
		}
		b := make([]byte, r.Size)
		n, err := s.proc.ReadMemory(r.Addr, b)
		if n == 0 && err != nil {
			return nil, fmt.Errorf("reading %s's text at %#x: %w", name, r.Addr, err)
		}
		out = append(out, moduleText{r.Addr, b[:n]})
	}
	s.mu.Lock()
	if s.texts == nil {
		s.texts = map[string][]moduleText{}
	}
	s.texts[name] = out
	s.mu.Unlock()
	return out, nil
}

// branchInto returns the address of a rel32 jmp, call or jcc outside fn
// whose target is in (site, site+n): the inside of a patched range.
func branchInto(texts []moduleText, fn Function, site uint64, n int) (uint64, bool) {
	lo, hi := site+1, site+uint64(n)
	for _, t := range texts {
		c := t.code
		for i := 0; i+5 <= len(c); i++ {
			at := t.lo + uint64(i)
			if at >= fn.Lo && at < fn.Hi() {
				continue // decoded: its branches were checked exactly
			}
			var end int
			switch {
			case c[i] == 0xe8 || c[i] == 0xe9:
				end = i + 5
			case c[i] == 0x0f && i+6 <= len(c) && c[i+1]&0xf0 == 0x80:
				end = i + 6
			default:
				continue
			}
			to := t.lo + uint64(end) + uint64(int64(int32(binary.LittleEndian.Uint32(c[end-4:end]))))
			if to >= lo && to < hi {
				return at, true
			}
		}
	}
	return 0, false
}

// checkIncoming refuses sites that code elsewhere in the module branches
// into.
func (s *Set) checkIncoming(regions []target.MemoryRegion, fn Function, sites []Site) error {
	texts, err := s.text(regions, fn.Lo)
	if err != nil {
		return &UnsafeError{Addr: fn.Lo, Reason: "cannot check for branches from elsewhere in the module: " + err.Error()}
	}
	for _, site := range sites {
		if from, ok := branchInto(texts, fn, site.Addr, site.Len); ok {
			return &UnsafeError{Addr: site.Addr, Reason: fmt.Sprintf("a branch at %#x (outside %s) lands inside the patched range [%#x, %#x)", from, fn.Name, site.Addr, site.Addr+uint64(site.Len))}
		}
		lo, hi := site.Addr+1, site.Addr+uint64(site.Len)
		for _, nb := range fn.Neighbors {
			insns, err := Decode(nb)
			if err != nil {
				return &UnsafeError{Addr: site.Addr, Reason: fmt.Sprintf("%s, within a short branch of the site, does not decode: %v", nb.Name, err)}
			}
			for k := range insns {
				if t, ok := insns[k].BranchTarget(); ok && t >= lo && t < hi {
					return &UnsafeError{Addr: site.Addr, Reason: fmt.Sprintf("the branch at %#x in %s lands inside the patched range [%#x, %#x)", insns[k].Address, nb.Name, site.Addr, hi)}
				}
			}
		}
	}
	return nil
}
