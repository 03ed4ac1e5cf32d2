package symbols

import (
	"errors"
	"os"

	"github.com/sondedbg/sonde/dwarf"
)

// dwpFile is a DWARF package (.dwp): the .dwo sections of many units
// concatenated, with .debug_cu_index saying which slice belongs to which DWO id.
type dwpFile struct {
	file    *dwarfFile
	entries map[uint64]dwarf.DWPContribution
}

func (s *dwoSet) package_() (*dwpFile, error) {
	s.dwpOnce.Do(func() {
		path := s.dwpPath
		if path == "" {
			s.dwpErr = os.ErrNotExist
			return
		}
		f, err := openDWO(path)
		if err != nil {
			s.dwpErr = err
			return
		}
		ef := f.ef
		idx, err := ef.section(".debug_cu_index")
		if err != nil {
			s.dwpErr = err
			return
		}
		entries, err := dwarf.ReadDWPIndex(idx)
		if err != nil {
			s.dwpErr = &Error{File: path, Op: "read .debug_cu_index", Err: err}
			return
		}
		s.dwp = &dwpFile{file: f, entries: entries}
	})
	return s.dwp, s.dwpErr
}

// unit returns the split unit for skel from the package; nil, nil when the
// package does not have it.
func (p *dwpFile) unit(skel *compUnit) (*compUnit, error) {
	c, ok := p.entries[skel.dwoID]
	if !ok {
		return nil, nil
	}
	// Each unit sees its own slices of the package's sections: make a view.
	full := p.file
	sub := &dwarfFile{name: full.name, ef: full.ef, isDWO: true, eager: true, sec: full.sec,
		abbrevs: map[uint64]*dwarf.AbbrevTable{}, decls: map[uint64]*fnName{}}
	var err error
	slice := func(b []byte, r dwarf.SectionSlice) []byte {
		if r.Size == 0 && r.Offset == 0 {
			return b
		}
		if r.Offset > uint64(len(b)) || r.Size > uint64(len(b))-r.Offset {
			err = errors.New("contribution outside its section")
			return nil
		}
		return b[r.Offset : r.Offset+r.Size]
	}
	sub.sec.info = slice(full.sec.info, c.Info)
	sub.sec.abbrev = slice(full.sec.abbrev, c.Abbrev)
	sub.sec.line = slice(full.sec.line, c.Line)
	sub.sec.strOffsets = slice(full.sec.strOffsets, c.StrOffsets)
	sub.sec.rnglists = slice(full.sec.rnglists, c.Rnglists)
	if err != nil {
		return nil, &Error{File: full.name, Op: "read .debug_cu_index", Err: err}
	}
	return splitUnitIn(sub, skel)
}
