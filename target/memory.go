package target

import "fmt"

// Perm is a mapping's protection and sharing.
type Perm uint8

const (
	PermRead Perm = 1 << iota
	PermWrite
	PermExec
	PermShared // MAP_SHARED; private otherwise
)

func (p Perm) String() string {
	b := []byte("---p")
	if p&PermRead != 0 {
		b[0] = 'r'
	}
	if p&PermWrite != 0 {
		b[1] = 'w'
	}
	if p&PermExec != 0 {
		b[2] = 'x'
	}
	if p&PermShared != 0 {
		b[3] = 's'
	}
	return string(b)
}

// MemoryRegion is one mapping of a process's address space.
type MemoryRegion struct {
	Addr        uint64
	Size        uint64
	Offset      uint64 // file offset of Addr
	BSS         bool   // anonymous zero-fill that belongs to the file mapped before it
	DevMajor    uint32
	DevMinor    uint32
	Inode       uint64
	FileName    string // path, or a pseudo name such as "[stack]", "[vdso]", "" for anonymous
	SectionName string // ELF section, when the region is known to be one (cores, symbol files)
	Perm        Perm
}

// End is the first address after the region.
func (r MemoryRegion) End() uint64 { return r.Addr + r.Size }

// Contains reports whether addr lies in the region.
func (r MemoryRegion) Contains(addr uint64) bool { return addr >= r.Addr && addr-r.Addr < r.Size }

func (r MemoryRegion) String() string {
	return fmt.Sprintf("%x-%x %s %08x %02x:%02x %d %s", r.Addr, r.End(), r.Perm, r.Offset, r.DevMajor, r.DevMinor, r.Inode, r.FileName)
}

// AccessType is a memory access type a memory context supports (context.h's
// MEM_ACCESS_*); TCF clients read them from Memory.getContext.
type AccessType string

const (
	AccessInstruction AccessType = "instruction"
	AccessData        AccessType = "data"
	AccessUser        AccessType = "user"
	AccessReadStop    AccessType = "rd-stop" // reading requires the context to be stopped
	AccessWriteStop   AccessType = "wr-stop" // writing requires the context to be stopped
)

// GroupKind selects one of a context's groups (context.h's CONTEXT_GROUP_*).
type GroupKind int

const (
	GroupStop       GroupKind = iota // contexts stopped together when one stops
	GroupBreakpoint                  // contexts that share breakpoints
	GroupProcess                     // contexts that share a memory space
	GroupSymbols                     // contexts that share symbol information
	GroupCPU                         // contexts that run on the same CPU model
)

// Group returns the context that represents c's group of the given kind. On Linux
// every group of a thread is its process.
func (c *Context) Group(kind GroupKind) *Context { return c.Process() }

// CanonicalAddress returns the canonical form of addr in c's memory space and the
// block of addresses that share one translation. Linux user space is flat: every
// address is canonical and the block is the page.
func (c *Context) CanonicalAddress(addr uint64) (canonical, blockAddr, blockSize uint64) {
	const page = 4096
	return addr, addr &^ (page - 1), page
}
