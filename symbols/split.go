package symbols

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sondedbg/sonde/dwarf"
)

// dwoSet finds and caches the split-DWARF files of one binary: .dwo files
// named by skeleton units (DW_AT_dwo_name, relative to DW_AT_comp_dir) and a
// .dwp package next to the binary.
type dwoSet struct {
	binaryPath string   // the executable; its directory is searched too
	dwpPath    string   // the .dwp package, "" when there is none
	extraDirs  []string // more directories to look in

	mu    sync.Mutex
	files map[string]*dwarfFile // opened .dwo files by path
	errs  map[string]error

	dwpOnce sync.Once
	dwp     *dwpFile
	dwpErr  error
}

// ErrNoDWO means a skeleton unit's .dwo file (and .dwp) could not be found.
var ErrNoDWO = errors.New("split DWARF file not found")

// loadSplit returns the split unit that completes skeleton unit skel.
func (d *dwarfFile) loadSplit(skel *compUnit) (*compUnit, error) {
	set := d.splitDWO
	if set == nil {
		return nil, skel.fail("load split DWARF", ErrNoDWO)
	}
	// A .dwp next to the binary wins: it is what a packaged build ships.
	if dwp, err := set.package_(); dwp != nil {
		if cu, err := dwp.unit(skel); cu != nil || err != nil {
			return cu, err
		}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var tried []string
	for _, p := range set.candidates(skel) {
		tried = append(tried, p)
		f, err := set.open(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		cu, err := splitUnitIn(f, skel)
		if err != nil || cu != nil {
			return cu, err
		}
	}
	return nil, skel.fail("load split DWARF", fmt.Errorf("%w: %s (tried %v)", ErrNoDWO, skel.dwoName, tried))
}

func (s *dwoSet) candidates(skel *compUnit) []string {
	name := skel.dwoName
	var out []string
	switch {
	case filepath.IsAbs(name):
		out = append(out, name)
	case skel.compDir != "":
		out = append(out, filepath.Join(skel.compDir, name))
	}
	// The build directory may be gone (binaries get copied): look next to
	// the binary and in the extra directories too.
	dirs := append([]string{filepath.Dir(s.binaryPath)}, s.extraDirs...)
	for _, dir := range dirs {
		if !filepath.IsAbs(name) {
			out = append(out, filepath.Join(dir, name))
		}
		out = append(out, filepath.Join(dir, filepath.Base(name)))
	}
	return out
}

func (s *dwoSet) open(path string) (*dwarfFile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[path]; ok {
		return f, nil
	}
	if err, ok := s.errs[path]; ok {
		return nil, err
	}
	f, err := openDWO(path)
	if s.files == nil {
		s.files, s.errs = map[string]*dwarfFile{}, map[string]error{}
	}
	if err != nil {
		s.errs[path] = err
		return nil, err
	}
	s.files[path] = f
	return f, nil
}

func openDWO(path string) (*dwarfFile, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	ef, err := openELFFile(path)
	if err != nil {
		return nil, err
	}
	f, err := newDWARFFile(ef, true)
	if err != nil {
		ef.close()
		return nil, err
	}
	return f, nil
}

// splitUnitIn finds the split compile unit with skel's DWO id in f.
func splitUnitIn(f *dwarfFile, skel *compUnit) (*compUnit, error) {
	hdrs, err := dwarf.ReadUnits(".debug_info.dwo", f.section(secInfo), false)
	if err != nil && len(hdrs) == 0 {
		return nil, &Error{File: f.name, Op: "read split units", Err: err}
	}
	for i := range hdrs {
		h := hdrs[i]
		if h.Type != dwarf.UnitSplitCompile && !(h.Version < 5 && h.Type == dwarf.UnitCompile) {
			continue
		}
		cu := &compUnit{file: f, hdr: h, skeleton: skel}
		if err := cu.readUnitDIE(); err != nil {
			return nil, err
		}
		if cu.dwoID == skel.dwoID || len(hdrs) == 1 && skel.dwoID == 0 {
			return cu, nil
		}
	}
	return nil, &Error{File: f.name, Op: "find split unit", Err: fmt.Errorf("no unit with DWO id %#x", skel.dwoID)}
}
