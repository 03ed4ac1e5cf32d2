package ptrace

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/target"
)

// MemoryImage returns a memimage.Image of a live process, for layers that read
// a lot of memory (unwinding, disassembly, symbolization): its executable file
// mappings that hold exactly the file's bytes are file sections (no syscall per
// read), process_vm_readv is the fallback for everything else, and the
// breakpoint shadow is the overlay, so reads show the program's own bytes.
//
// The backend keeps the image current while the process is traced: breakpoints
// planted and removed update the overlay, a write through WriteMemory into a
// file section drops that file's sections (the fallback then reads the
// process), and an exec empties the image (the address space's generation, the
// ASID's second field, counts execs). The ASID is {pid, generation}.
func (b *Backend) MemoryImage(proc *target.Context) (*memimage.Image, memimage.ASID, error) {
	var im *memimage.Image
	var asid memimage.ASID
	err := b.do("memory image", func() error {
		p, err := b.procOf(proc, "memory image")
		if err != nil {
			return err
		}
		asid = memimage.ASID{Space: uint64(p.pid), Generation: uint64(p.execs)}
		im = memimage.New(string(proc.ID()))
		gen := p.execs
		im.SetFallback(func(buf []byte, a memimage.ASID, addr uint64) (int, error) {
			if !a.Matches(memimage.ASID{Space: uint64(p.pid), Generation: uint64(gen)}) {
				return 0, fmt.Errorf("%s: no such address space", a)
			}
			return readRaw(p, addr, buf)
		})
		if err := addFileSections(im, asid, p.pid); err != nil {
			return err
		}
		owner := p.memOwner
		owner.memMu.Lock()
		defer owner.memMu.Unlock()
		owner.shadow.Each(func(addr uint64, orig byte) {
			im.SetOriginal(asid, addr, []byte{orig})
		})
		p.images = append(p.images, im)
		return nil
	})
	return im, asid, err
}

// addFileSections adds the executable, private file mappings whose pages were
// never written (smaps "Anonymous: 0 kB"): their bytes are the file's.
func addFileSections(im *memimage.Image, asid memimage.ASID, pid int) error {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return target.Errorf(target.CodeAlreadyExited, "memory image", target.ProcessID(pid), err)
	}
	var cur *target.MemoryRegion
	flush := func(anon uint64) {
		if cur == nil || anon != 0 || cur.Perm&target.PermExec == 0 || cur.Perm&(target.PermWrite|target.PermShared) != 0 ||
			!strings.HasPrefix(cur.FileName, "/") || strings.HasSuffix(cur.FileName, " (deleted)") {
			return
		}
		if s, err := memimage.NewFileSection(cur.FileName, cur.Offset, cur.Size); err == nil {
			im.Add(s, asid, cur.Addr)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Anonymous:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			flush(kb)
			cur = nil
			continue
		}
		if f := strings.Fields(line); len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4 {
			if rs, err := parseMaps([]byte(line)); err == nil && len(rs) == 1 {
				cur = &rs[0]
			}
		}
	}
	return nil
}

// imagesSetOriginal and the helpers below keep a process's images in step with its
// breakpoints and writes. Called with the memory owner's memMu held.
func (p *process) imagesSetOriginal(addr uint64, orig byte) {
	for _, im := range p.images {
		im.SetOriginal(p.asid(), addr, []byte{orig})
	}
}

func (p *process) imagesClearOriginal(addr uint64) {
	for _, im := range p.images {
		im.ClearOriginal(p.asid(), addr, 1)
	}
}

// imagesWritten drops the file sections a write changed.
func (p *process) imagesWritten(addr, size uint64) {
	for _, im := range p.images {
		for _, m := range im.Sections() {
			if m.Begin < addr+size && addr < m.End {
				im.RemoveFile(m.Section.Name(), p.asid())
			}
		}
	}
}

// imagesExec empties the images at an exec: the address space they describe is gone.
func (p *process) imagesExec() {
	for _, im := range p.images {
		im.RemoveASID(p.asid())
		im.ClearOriginal(p.asid(), 0, 1<<62)
	}
	p.images = nil
}

func (p *process) asid() memimage.ASID {
	return memimage.ASID{Space: uint64(p.pid), Generation: uint64(p.execs)}
}
