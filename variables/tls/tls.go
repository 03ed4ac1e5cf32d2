// Package tls locates the thread-local storage of any module of a glibc
// process on x86-64 — the executable, libraries loaded at start, libraries
// loaded with dlopen — for one thread, the way the dynamic linker laid it
// out, so that DW_OP_form_tls_address (DW_OP_GNU_push_tls_address) can be
// evaluated for __thread variables of every module, in live processes and
// core files alike.
//
// It reads what glibc keeps in target memory, not libthread_db: each
// module's struct link_map says its module id (l_tls_modid) and, for static
// TLS, its offset below the thread pointer (l_tls_offset); a thread's
// dynamic thread vector (dtv, pointed to from the thread control block at
// the thread pointer, fs_base) holds the block of every module by id,
// allocated lazily for dlopen'd libraries. x86-64 uses TLS variant II: the
// static blocks lie below the thread pointer, block = tp - l_tls_offset.
//
// struct link_map's TLS fields are internal to glibc and move between
// versions, so their offsets are read from the dynamic linker's DWARF when
// present (libc6-dbg and the like: LayoutFromDWARF). Without it, ScanLayout
// finds them in a module's link_map by content: glibc has kept
// l_tls_initimage, l_tls_initimage_size, l_tls_blocksize, l_tls_align,
// l_tls_firstbyte_offset, l_tls_offset, l_tls_modid in this order since
// TLS support began (2.3), and the first four equal the module's PT_TLS
// segment. The dtv pointer's place (tcbhead_t.dtv, 8 bytes above the thread
// pointer) and dtv_t's shape (16 bytes, the block pointer first) are taken
// from the DWARF too when present, else these long-standing values.
//
// Everything read from the target is untrusted: reads are bounded, list
// walks are bounded, and a value that makes no sense is an error, never an
// address made up.
package tls

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Memory reads target memory; a short count means the rest is unreadable.
type Memory interface {
	ReadMemory(buf []byte, addr uint64) (int, error)
}

// Segment is a module's PT_TLS program header (link-time values).
type Segment struct {
	Vaddr, Filesz, Memsz, Align uint64
}

// Offset turns the operand of DW_OP_form_tls_address into an offset in the
// module's block. Compilers mean it as the variable's offset in the block
// (R_X86_64_DTPOFF64), but gcc's split DWARF puts it in .debug_addr
// (DW_OP_GNU_const_index, DW_OP_constx) with a plain R_X86_64_64
// relocation, which the linker resolves to the variable's link-time
// address inside PT_TLS. A real offset is below the segment's size, and the
// segment never starts below its own size in a linked module, so a value at
// or above Vaddr within the segment can only be such an address.
func (s Segment) Offset(v uint64) uint64 {
	if s.Vaddr >= s.Memsz && v >= s.Vaddr && v-s.Vaddr < s.Memsz {
		return v - s.Vaddr
	}
	return v
}

// Module is one module with thread-local storage.
type Module struct {
	Name string
	// LinkMap is the run-time address of its struct link_map; 0 for a
	// statically linked executable, which has none.
	LinkMap uint64
	// Bias is its load bias (link_map's l_addr).
	Bias    uint64
	Segment Segment
}

// Layout is where glibc keeps what a lookup reads.
type Layout struct {
	// LinkMapOffset and LinkMapModID are the offsets of l_tls_offset and
	// l_tls_modid in struct link_map.
	LinkMapOffset, LinkMapModID uint64
	// DTV is the offset of the dtv pointer from the thread pointer
	// (tcbhead_t.dtv); DTVEntry the size of a dtv_t and DTVVal the offset of
	// the block pointer in it.
	DTV, DTVEntry, DTVVal uint64
	// Slotinfo, when set, lets a lookup check that a thread's dtv is current
	// for a module, as libthread_db does; without it a slot is trusted when
	// it holds a block pointer.
	Slotinfo *Slotinfo
	// Source says where the offsets come from, for messages.
	Source string
}

// Slotinfo locates the dynamic linker's list of TLS modules
// (_rtld_global._dl_tls_dtv_slotinfo_list): each module id's generation,
// the dtv generation a thread must have reached to use that slot.
type Slotinfo struct {
	// Head is the run-time address of the pointer to the first list chunk.
	Head uint64
	// struct dtv_slotinfo_list: offsets of len, next, slotinfo[].
	ListLen, ListNext, ListSlots uint64
	// struct dtv_slotinfo: its size and the offsets of gen and map.
	SlotSize, SlotGen, SlotMap uint64
}

// Defaults of x86-64 glibc, used when no DWARF says otherwise.
const (
	defaultDTV      = 8  // tcbhead_t { void *tcb; dtv_t *dtv; ... }
	defaultDTVEntry = 16 // union dtv { size_t counter; struct { void *val, *to_free; } pointer; }
	defaultDTVVal   = 0
)

// Errors wrapped by this package's errors; test with errors.Is.
var (
	// ErrNotAllocated: the thread has not yet allocated the module's block
	// (a dlopen'd library whose variables the thread never used); gdb says
	// the same.
	ErrNotAllocated = errors.New("the thread has not yet allocated storage for thread-local variables of this module")
	// ErrNoLayout: glibc's link_map layout is not known (no DWARF of the
	// dynamic linker and the link_map does not show the TLS fields).
	ErrNoLayout = errors.New("glibc's link_map layout is unknown")
	// ErrNoTLS: the module has no PT_TLS segment.
	ErrNoTLS = errors.New("module has no thread-local storage")
	// ErrCorrupt: what the target holds makes no sense.
	ErrCorrupt = errors.New("inconsistent thread-local storage data")
)

// Error says which module and step a lookup failed on.
type Error struct {
	Module string
	Op     string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("tls: %s of %s: %v", e.Op, e.Module, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// maxModID bounds module ids and dtv lengths taken from the target.
const maxModID = 1 << 20

// Block returns the run-time address of m's TLS block in the thread whose
// thread pointer (fs_base) is tp. A variable's address is the block plus
// its DW_OP_form_tls_address offset.
func Block(mem Memory, lay *Layout, m *Module, tp uint64) (uint64, error) {
	fail := func(op string, err error) (uint64, error) {
		return 0, &Error{Module: m.Name, Op: op, Err: err}
	}
	if m.Segment.Memsz == 0 {
		return fail("find TLS block", ErrNoTLS)
	}
	if tp == 0 {
		return fail("find TLS block", fmt.Errorf("%w: thread pointer is 0", ErrCorrupt))
	}
	if m.LinkMap == 0 {
		// A static executable: its block ends at the thread pointer
		// (glibc's __libc_setup_tls: l_tls_offset = roundup(memsz, align)).
		return tp - roundUp(m.Segment.Memsz, max(m.Segment.Align, 1)), nil
	}
	if lay == nil {
		return fail("find TLS block", ErrNoLayout)
	}
	off, err := readWord(mem, m.LinkMap+lay.LinkMapOffset)
	if err != nil {
		return fail("read l_tls_offset", err)
	}
	modid, err := readWord(mem, m.LinkMap+lay.LinkMapModID)
	if err != nil {
		return fail("read l_tls_modid", err)
	}
	if modid == 0 || modid > maxModID {
		return fail("read l_tls_modid", fmt.Errorf("%w: module id %d", ErrCorrupt, modid))
	}
	// Static TLS (modules loaded at start, and dlopen'd ones the linker
	// placed in the static surplus): a fixed offset below the thread
	// pointer. 0 is NO_TLS_OFFSET, -1 FORCED_DYNAMIC_TLS_OFFSET.
	if off != 0 && off != ^uint64(0) {
		if off > tp || off > 1<<40 {
			return fail("read l_tls_offset", fmt.Errorf("%w: offset %#x", ErrCorrupt, off))
		}
		return tp - off, nil
	}
	return dynamicBlock(mem, lay, m, tp, modid)
}

// dynamicBlock reads a module's block from the thread's dtv.
func dynamicBlock(mem Memory, lay *Layout, m *Module, tp, modid uint64) (uint64, error) {
	fail := func(op string, err error) (uint64, error) {
		return 0, &Error{Module: m.Name, Op: op, Err: err}
	}
	dtv, err := readWord(mem, tp+lay.DTV)
	if err != nil {
		return fail("read the thread's dtv pointer", err)
	}
	if dtv < lay.DTVEntry {
		return fail("read the thread's dtv pointer", fmt.Errorf("%w: dtv at %#x", ErrCorrupt, dtv))
	}
	// dtv[-1].counter is the vector's length, dtv[0].counter its generation.
	length, err := readWord(mem, dtv-lay.DTVEntry)
	if err != nil {
		return fail("read the dtv length", err)
	}
	if modid > length {
		return fail("check the dtv length", ErrNotAllocated) // the vector predates the module
	}
	if lay.Slotinfo != nil {
		gen, err := readWord(mem, dtv)
		if err != nil {
			return fail("read the dtv generation", err)
		}
		slotGen, slotMap, err := slot(mem, lay.Slotinfo, modid)
		if err != nil {
			return fail("read the slotinfo list", err)
		}
		if slotMap != m.LinkMap {
			return fail("read the slotinfo list", fmt.Errorf("%w: module id %d belongs to link_map %#x, not %#x", ErrCorrupt, modid, slotMap, m.LinkMap))
		}
		if slotGen > gen {
			return fail("check the dtv generation", ErrNotAllocated) // not updated since the module was loaded
		}
	}
	val, err := readWord(mem, dtv+modid*lay.DTVEntry+lay.DTVVal)
	if err != nil {
		return fail("read the dtv", err)
	}
	// TLS_DTV_UNALLOCATED is (void *) -1; libthread_db tests the low bit.
	if val == 0 || val&1 != 0 {
		return fail("read the dtv slot", ErrNotAllocated)
	}
	return val, nil
}

// maxSlotChunks bounds the walk of the slotinfo list.
const maxSlotChunks = 1 << 12

// slot returns the generation and link_map of module id modid.
func slot(mem Memory, s *Slotinfo, modid uint64) (gen, lm uint64, err error) {
	list, err := readWord(mem, s.Head)
	if err != nil {
		return 0, 0, err
	}
	idx := modid
	for n := 0; ; n++ {
		if list == 0 || n > maxSlotChunks {
			return 0, 0, fmt.Errorf("%w: module id %d is past the slotinfo list", ErrCorrupt, modid)
		}
		length, err := readWord(mem, list+s.ListLen)
		if err != nil {
			return 0, 0, err
		}
		if idx < length {
			break
		}
		idx -= length
		if list, err = readWord(mem, list+s.ListNext); err != nil {
			return 0, 0, err
		}
	}
	at := list + s.ListSlots + idx*s.SlotSize
	if gen, err = readWord(mem, at+s.SlotGen); err != nil {
		return 0, 0, err
	}
	lm, err = readWord(mem, at+s.SlotMap)
	return gen, lm, err
}

func roundUp(n, align uint64) uint64 { return (n + align - 1) / align * align }

func readWord(mem Memory, addr uint64) (uint64, error) {
	var b [8]byte
	n, err := mem.ReadMemory(b[:], addr)
	if n < len(b) {
		if err == nil {
			err = errors.New("short read")
		}
		return 0, fmt.Errorf("reading %#x: %w", addr, err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}
