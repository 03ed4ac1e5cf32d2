package core

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/target"
)

// zeroPage backs the zero-filled tail of a file mapping's last page.
var zeroPage = make([]byte, pageSize)

// newImage makes the memory image. Its sections are the mapped files, for
// the bytes the core left out (added by ensureFiles); its fallback serves
// everything else: the core's own bytes, read in place from the mapped core
// file, and an explanation for every address neither can supply. Core bytes
// go through the fallback rather than a section per segment because a
// process can have tens of thousands of mappings, and the core and file
// ranges never overlap.
func (c *Core) newImage() {
	c.cache = c.opts.Cache
	if c.cache == nil {
		c.cache = memimage.NewSectionCache(memimage.NoLimit)
		c.ownCache = c.cache
	}
	c.image = memimage.New(c.path)
	c.image.SetFallback(c.fallback)
}

// ensureFiles finds the mapped files and completes the image and the memory
// map, once. Every method that reads memory or reports on files calls it
// first; the fallback never does (resolveFiles reads through it).
func (c *Core) ensureFiles() {
	c.filesOnce.Do(func() {
		c.byPath = c.resolveFiles()
		for _, a := range c.layout.areas {
			c.fillArea(a, c.byPath)
		}
		c.flushFilePiece()
		sort.Slice(c.gaps, func(i, j int) bool { return c.gaps[i].Start < c.gaps[j].Start })
		c.buildRegions()
		c.checkWrittenPrivate()
	})
}

// checkWrittenPrivate warns when the core leaves out the memory a process
// wrote to (coredump_filter without bit 0): the main stack, always written,
// then has no bytes in the core. Read-only file mappings are still read from
// their files, which is right unless the program wrote to them after an
// mprotect (RELRO excepted: it is never read from the file).
func (c *Core) checkWrittenPrivate() {
	stack, ok := c.auxv.Lookup(AT_EXECFN)
	if !ok || len(c.fileRanges) == 0 {
		return
	}
	areas := c.layout.areas
	k := sort.Search(len(areas), func(k int) bool { return areas[k].end > stack })
	if k == len(areas) || areas[k].start > stack || areas[k].load < 0 || areas[k].file >= 0 {
		return
	}
	if ld := c.layout.loads[areas[k].load]; ld.declared == 0 {
		c.problems = append(c.problems, Problem{Kind: ProblemMissingInfo, Start: areas[k].start, End: areas[k].end, Offset: -1,
			Err: fmt.Errorf("the core holds no written private memory (not even the stack; coredump_filter bit 0 was clear): read-only file mappings are read from their files, which differ if the program wrote to them after an mprotect")})
	}
}

// resolveFiles makes one MappedFile per NT_FILE path, with the build-id and
// first page the core holds of it, and finds the executable's stand-in. The
// other files are looked for only when needed (need) or asked for
// (MappedFiles).
func (c *Core) resolveFiles() map[string]*MappedFile {
	byPath := map[string]*MappedFile{}
	entry, _ := c.auxv.Lookup(AT_ENTRY)
	var exe *MappedFile
	for _, f := range c.layout.files {
		p, deleted := trimDeleted(f.Path)
		mf := byPath[f.Path]
		if mf == nil {
			mf = &MappedFile{Path: p, Deleted: deleted}
			byPath[f.Path] = mf
			c.files = append(c.files, mf)
		}
		if ext := f.Offset + (f.End - f.Start); ext > mf.extent && ext >= f.Offset {
			mf.extent = ext
		}
		if f.Offset == 0 && !mf.firstKnown {
			mf.first, mf.firstKnown = f.Start, true
		}
		if f.Offset == 0 && mf.BuildID == nil && f.End > f.Start {
			r := offsetReader{c.image.ReaderAt(asid), f.Start}
			if id, err := readBuildID(r, f.End-f.Start); err == nil {
				mf.BuildID = id
			}
			// Keep the core's copy of the first page (the kernel dumps it for
			// ELF files) to compare candidates with when there is no build-id.
			head := make([]byte, min(pageSize, f.End-f.Start))
			if n, _ := c.image.ReadFull(head, asid, f.Start); n > 0 {
				mf.head = head[:n]
			}
		}
		if entry != 0 && f.Start <= entry && entry < f.End {
			exe = mf
		}
	}
	if exe == nil && c.psinfo != nil && c.psinfo.Name != "" {
		// No NT_AUXV: the command name is the executable's base name, cut to
		// 15 bytes.
		for _, mf := range c.files {
			if strings.HasPrefix(filepath.Base(mf.Path), c.psinfo.Name) {
				exe = mf
				break
			}
		}
	}
	c.exe = exe
	if exe != nil {
		c.resolveFile(exe) // the symbols layer will want it, needed or not
	}
	return byPath
}

// resolveFile looks for mf's stand-in, once.
func (c *Core) resolveFile(mf *MappedFile) {
	if mf.resolved {
		return
	}
	mf.resolved = true
	c.opts.resolve(mf, mf == c.exe, c.coreTime)
	if mf.Err == nil && mf.firstKnown {
		mf.bias, mf.biasKnown = mf.first-mf.base, true
	}
}

// need records that some of mf's mapped bytes must come from the file, finds
// it, and reports it when it cannot be found or is not the right file. Files
// whose bytes are all in the core are never reported.
func (c *Core) need(mf *MappedFile) {
	c.resolveFile(mf)
	if mf.Needed {
		return
	}
	mf.Needed = true
	if mf.Err == nil {
		return
	}
	kind := ProblemFileMissing
	var fc *FileChangedError
	if errors.As(mf.Err, &fc) {
		kind = ProblemFileChanged
	}
	c.problems = append(c.problems, Problem{Kind: kind, Path: mf.Path, Offset: -1, Err: mf.Err})
}

// fillArea adds the file pieces for the parts of area a the core left out,
// and records a gap for what no file can supply.
func (c *Core) fillArea(a area, byPath map[string]*MappedFile) {
	ms, te := c.layout.missing(a)
	if ms >= a.end {
		return
	}
	var mf *MappedFile
	var fm FileMapping
	if a.file >= 0 {
		fm = c.layout.files[a.file]
		mf = byPath[fm.Path]
	}
	ld := load{}
	if a.load >= 0 {
		ld = c.layout.loads[a.load]
	}
	// Bytes the core should hold but lost to truncation were dumped because
	// they may differ from any file (the kernel dumps what was written): they
	// are gone. Only bytes the dumper chose to leave out may come from a file.
	if te > ms {
		c.addGap(ms, te, fmt.Sprintf("the core is truncated: segment 0x%x-0x%x should hold these bytes at file offset %d, the file ends at %d",
			ld.Vaddr, ld.End(), ld.Offset+(ms-ld.Vaddr), c.size), pathOf(mf))
	}
	if te >= a.end {
		return
	}
	if a.load >= 0 && ld.Flags&pfR == 0 {
		// A guard page, a PROT_NONE reservation or the hole between a
		// library's segments: unreadable in the process too, so nothing
		// is missing and there is no problem to report.
		c.gaps = append(c.gaps, &MissingError{Start: te, End: a.end, Mapped: true,
			Reason: "the mapping is not readable (PROT_NONE) in the process either"})
		return
	}
	if mf != nil && (a.load < 0 || ld.Flags&pfW == 0) {
		c.need(mf) // a writable mapping's file could not stand in anyway
	}
	if mf != nil && mf.Found != "" && !c.writable(a) {
		c.addFileRange(mf, fm, te, a.end)
		return
	}
	why := ""
	switch {
	case a.load < 0 && mf == nil:
		why = fmt.Sprintf("the core has no PT_LOAD for this mapping of %s", fm.Path)
	case a.load < 0 && mf.Found == "":
		why = fmt.Sprintf("the core has no PT_LOAD for this mapping of %s, and the file is not available: %v", fm.Path, mf.Err)
	case a.load < 0:
		why = fmt.Sprintf("the core has no PT_LOAD for this mapping of %s, and the file maps it writable, so its bytes may differ", fm.Path)
	case mf != nil && c.writable(a):
		why = fmt.Sprintf("writable mapping of %s was not dumped, and the file's bytes may differ from the process's", mf.Path)
	case mf != nil:
		why = mf.Err.Error()
	default:
		why = "anonymous memory not dumped (left out by the coredump_filter or the dumper)"
	}
	c.addGap(te, a.end, why, pathOf(mf))
}

// addFileRange serves [start, end) of the read-only mapping fm from the file,
// except its RELRO parts: the dynamic loader wrote those before making them
// read-only, so the file does not hold the process's bytes. Where the file's
// load address is unknown (no mapping of its offset 0), any RELRO makes the
// whole range a gap, since which part is RELRO cannot be told.
func (c *Core) addFileRange(mf *MappedFile, fm FileMapping, start, end uint64) {
	if len(mf.relro) > 0 && !mf.biasKnown {
		c.addGap(start, end, fmt.Sprintf("%s has RELRO data and its load address is unknown (no mapping of its first page), so its bytes cannot be trusted here", mf.Path), mf.Path)
		return
	}
	cur := start
	for _, r := range mf.relro {
		lo, hi := r[0]+mf.bias, r[1]+mf.bias
		if hi < lo { // wrapped: reaches past any address
			hi = ^uint64(0)
		}
		lo, hi = max(lo, cur), min(hi, end)
		if lo >= hi {
			continue
		}
		if lo > cur {
			c.addFilePiece(mf, fm, cur, lo)
		}
		c.addGap(lo, hi, fmt.Sprintf("RELRO data of %s, relocated by the dynamic loader, was not dumped; the file's bytes are not the process's", mf.Path), mf.Path)
		cur = hi
	}
	if cur < end {
		c.addFilePiece(mf, fm, cur, end)
	}
}

func pathOf(mf *MappedFile) string {
	if mf == nil {
		return ""
	}
	return mf.Path
}

// filePiece is a range of a file waiting to be placed in the image:
// consecutive mappings of one file at consecutive offsets (a library's r--,
// r-x and r-- segments) become one section.
type filePiece struct {
	path       string
	start, end uint64 // addresses
	offset     uint64 // file offset of start
}

// addFilePiece serves [start, end) of the mapping fm from the file mf.Found.
// Bytes past the file's end but within its last page read as zero, as they do
// in the process; anything further is a gap.
func (c *Core) addFilePiece(mf *MappedFile, fm FileMapping, start, end uint64) {
	off := fm.Offset + (start - fm.Start)
	size := mf.foundSize
	fileEnd := start // address of the file's end
	if off < size {
		fileEnd = start + min(size-off, end-start)
		p := &c.pend
		if p.path == mf.Found && p.end == start && p.offset+(p.end-p.start) == off {
			p.end = fileEnd
		} else {
			c.flushFilePiece()
			c.pend = filePiece{path: mf.Found, start: start, end: fileEnd, offset: off}
		}
	}
	if fileEnd >= end {
		return
	}
	c.flushFilePiece()
	if zeroEnd := min(alignUp(fileEnd, pageSize), end); zeroEnd > fileEnd {
		s, err := memimage.NewMemorySection("zero fill after "+mf.Found, zeroPage[:zeroEnd-fileEnd])
		if err != nil {
			c.addGap(fileEnd, end, err.Error(), mf.Path)
			return
		}
		c.place(fileEnd, s, 0)
		fileEnd = zeroEnd
	}
	if fileEnd < end {
		c.addGap(fileEnd, end, fmt.Sprintf("the mapping reaches past the end of %s (%d bytes)", mf.Found, size), mf.Path)
	}
}

// flushFilePiece places the pending file range.
func (c *Core) flushFilePiece() {
	p := c.pend
	c.pend = filePiece{}
	if p.end <= p.start {
		return
	}
	id, err := c.cache.AddFile(p.path, p.offset, p.end-p.start, p.start)
	var sec *memimage.Section
	if err == nil {
		sec, _, err = c.cache.Section(id)
	}
	if err != nil {
		c.addGap(p.start, p.end, fmt.Sprintf("%s: %v", p.path, err), p.path)
		return
	}
	c.place(p.start, sec, id)
}

// maxImageSections bounds how many file sections go into the image itself.
// Adding a section to a memimage.Image costs time linear in the sections it
// has, so a process with tens of thousands of file mappings would take
// seconds to open; past this many, the fallback serves the rest from the same
// sections, through the sorted list in Core.fileRanges.
const maxImageSections = 512

// place records that the bytes at [start, start+sec.Size()) come from sec,
// and adds sec to the image while it has room.
func (c *Core) place(start uint64, sec *memimage.Section, id memimage.SectionID) {
	c.fileRanges = append(c.fileRanges, fileRange{start: start, end: start + sec.Size(), section: sec})
	if len(c.fileRanges) > maxImageSections {
		return
	}
	var err error
	if id != 0 {
		err = c.image.AddCached(c.cache, id, asid)
	} else {
		err = c.image.Add(sec, asid, start)
	}
	if err != nil {
		// The fallback still serves it from fileRanges.
		c.problems = append(c.problems, Problem{Kind: ProblemMissingInfo, Start: start, End: start + sec.Size(), Offset: -1,
			Err: fmt.Errorf("placing %s in the image: %w", sec.Name(), err)})
	}
}

// fileRange is a range of addresses whose bytes a section (a mapped file, or
// zeros) supplies.
type fileRange struct {
	start, end uint64
	section    *memimage.Section
}

// addGap records that [start, end) has no bytes, and why.
func (c *Core) addGap(start, end uint64, why, path string) {
	g := &MissingError{Start: start, End: end, Mapped: true, Reason: why}
	c.gaps = append(c.gaps, g)
	c.problems = append(c.problems, Problem{Kind: ProblemNotDumped, Start: start, End: end, Path: path, Offset: -1, Err: errors.New(why)})
}

// fallback is the image's answer for every address no section covers: the
// core's bytes, file bytes beyond maxImageSections, or why there are none.
func (c *Core) fallback(p []byte, _ memimage.ASID, addr uint64) (int, error) {
	areas := c.layout.areas
	if k := sort.Search(len(areas), func(k int) bool { return areas[k].end > addr }); k < len(areas) && areas[k].start <= addr {
		if start, end, off := c.layout.coreBytes(areas[k]); start <= addr && addr < end {
			n := min(uint64(len(p)), end-addr)
			return c.mem.read(p[:n], off+(addr-start))
		}
	}
	fr := c.fileRanges
	if k := sort.Search(len(fr), func(k int) bool { return fr[k].end > addr }); k < len(fr) && fr[k].start <= addr {
		n := min(uint64(len(p)), fr[k].end-addr)
		got, err := fr[k].section.ReadAt(p[:n], int64(addr-fr[k].start))
		if got > 0 {
			return got, nil
		}
		return 0, err
	}
	i := sort.Search(len(c.gaps), func(i int) bool { return c.gaps[i].End > addr })
	if i < len(c.gaps) && c.gaps[i].Start <= addr {
		g := *c.gaps[i]
		return 0, &g
	}
	// Not mapped at all: say up to where.
	end := ^uint64(0)
	j := sort.Search(len(c.regions), func(j int) bool { return c.regions[j].End() > addr })
	if j < len(c.regions) {
		end = c.regions[j].Addr
	}
	start := uint64(0)
	if j > 0 {
		start = c.regions[j-1].End()
	}
	return 0, &MissingError{Start: start, End: end, Mapped: false}
}

// writable reports whether area a's mapping was (or may have been)
// writable. An area with no PT_LOAD (gdb's gcore writes none for read-only
// file mappings it leaves out) takes the flags of the file's own segment.
func (c *Core) writable(a area) bool {
	if a.load >= 0 {
		return c.layout.loads[a.load].Flags&pfW != 0
	}
	fl, ok := c.fileFlags(a)
	return !ok || fl&pfW != 0
}

// fileFlags returns the flags of the mapped file's segment under area a.
func (c *Core) fileFlags(a area) (uint32, bool) {
	if a.file < 0 {
		return 0, false
	}
	mf := c.byPath[c.layout.files[a.file].Path]
	if mf == nil || mf.Found == "" {
		return 0, false
	}
	if mf.loads == nil {
		return pfR, true // not ELF: a dumper that left it out found it unmodified
	}
	return mf.flagsAt(a.start)
}

// vsyscallAddr is where x86-64 Linux maps the legacy vsyscall page in every
// process.
const vsyscallAddr = 0xffffffffff600000

// buildRegions makes the memory map from the areas. Anonymous regions are
// named only where the core proves it: the vDSO (AT_SYSINFO_EHDR), the main
// stack (AT_EXECFN points into it) and the fixed vsyscall page; the heap has
// no such witness and stays unnamed.
func (c *Core) buildRegions() {
	vdso, _ := c.auxv.Lookup(AT_SYSINFO_EHDR)
	stack, ok := c.auxv.Lookup(AT_EXECFN)
	if !ok {
		stack, _ = c.auxv.Lookup(AT_RANDOM)
	}
	for _, a := range c.layout.areas {
		r := target.MemoryRegion{Addr: a.start, Size: a.end - a.start}
		fl, known := c.fileFlags(a)
		if a.load >= 0 {
			fl, known = c.layout.loads[a.load].Flags, true
		}
		if known {
			if fl&pfR != 0 {
				r.Perm |= target.PermRead
			}
			if fl&pfW != 0 {
				r.Perm |= target.PermWrite
			}
			if fl&pfX != 0 {
				r.Perm |= target.PermExec
			}
		}
		switch {
		case a.file >= 0:
			f := c.layout.files[a.file]
			r.FileName = f.Path
			r.Offset = f.Offset + (a.start - f.Start)
		case vdso != 0 && a.start <= vdso && vdso < a.end:
			r.FileName = "[vdso]"
		case stack != 0 && a.start <= stack && stack < a.end:
			r.FileName = "[stack]"
		case a.start == vsyscallAddr:
			r.FileName = "[vsyscall]"
		}
		c.regions = append(c.regions, r)
	}
}
