package symbols

import (
	"debug/elf"
	"runtime/debug"
)

// Section is the contents of one ELF section with its link-time address.
type Section struct {
	Name string
	Addr uint64 // sh_addr (0 for non-allocated sections such as .debug_frame)
	Data []byte // nil when absent
	File string // the file it was read from
}

// UnwindSections are the call-frame-information sources of a binary, for the
// unwinder: .eh_frame_hdr (binary search table), .eh_frame, and .debug_frame
// (from the binary, else from its separate debug file, where it often is the
// only copy). The byte slices are shared: do not modify them.
type UnwindSections struct {
	EhFrameHdr, EhFrame, DebugFrame Section
}

// UnwindSections returns the binary's CFI sections. Absent sections have nil
// Data; an error names the file whose section could not be read.
func (b *Binary) UnwindSections() (u UnwindSections, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	var firstErr error
	get := func(dst *Section, ef *elfFile, name string) {
		if ef == nil || dst.Data != nil {
			return
		}
		s := ef.f.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			return
		}
		data, err := ef.section(name)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		*dst = Section{Name: name, Addr: s.Addr, Data: data, File: ef.name}
	}
	get(&u.EhFrameHdr, b.ef, ".eh_frame_hdr")
	get(&u.EhFrame, b.ef, ".eh_frame")
	get(&u.DebugFrame, b.ef, ".debug_frame")
	get(&u.DebugFrame, b.debug, ".debug_frame")
	return u, firstErr
}
