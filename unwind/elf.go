package unwind

import (
	"debug/elf"
	"fmt"
)

// Sources holds the unwind sections of one ELF image.
type Sources struct {
	EHFrameHdr, EHFrame, DebugFrame Section
}

// ReadSources reads .eh_frame_hdr, .eh_frame and .debug_frame from an ELF
// image (a file, a separate debug file, or a vDSO image read from target
// memory). Missing sections are left empty; compressed .debug_frame is
// decompressed by debug/elf.
func ReadSources(f *elf.File) (Sources, error) {
	var s Sources
	for _, x := range []struct {
		name string
		dst  *Section
	}{{".eh_frame_hdr", &s.EHFrameHdr}, {".eh_frame", &s.EHFrame}, {".debug_frame", &s.DebugFrame}} {
		sec := f.Section(x.name)
		if sec == nil || sec.Type == elf.SHT_NOBITS {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			return s, fmt.Errorf("unwind: reading %s: %w", x.name, err)
		}
		*x.dst = Section{Data: data, Addr: sec.Addr}
	}
	return s, nil
}

// SetSources installs unwind sections into m. Call it before the module is
// first used by a walk: the engine decodes them once.
func (m *Module) SetSources(s Sources) {
	m.EHFrameHdr, m.EHFrame, m.DebugFrame = s.EHFrameHdr, s.EHFrame, s.DebugFrame
}

// SetTables installs t, the tables of the image m maps (NewTables of its
// sections, shared with the other modules of that image), instead of
// sections: the walks of m use t's tables and cache. Call it before the
// module is first used by a walk.
func (m *Module) SetTables(t *Tables) {
	m.SetSources(t.src)
	m.shared = t
}
