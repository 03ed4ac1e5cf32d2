package symbols

import (
	"path/filepath"
	"runtime/debug"

	"github.com/sondedbg/sonde/dwarf"
)

// SourceFiles returns the files b's line tables have code in — each unit's
// primary file and the headers whose code (templates, inline functions)
// was compiled into it — once each, in unit order. A relative path is
// joined with its unit's compilation directory when that is absolute, so
// that a debugger front end can open the file.
func (b *Binary) SourceFiles() (_ []string, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if b.dw == nil {
		return nil, nil
	}
	b.dw.index()
	seen := map[string]bool{}
	var out []string
	var errs []error
	add := func(p, dir string) {
		if p == "" {
			return
		}
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, cu := range b.dw.units {
		if cu.hdr.Type != dwarf.UnitCompile && cu.hdr.Type != dwarf.UnitSkeleton {
			continue
		}
		if cu.readUnitDIE() != nil {
			continue
		}
		add(cu.name, cu.compDir)
		lt, err := cu.lineTable()
		if err != nil {
			errs = append(errs, err)
		}
		if lt == nil {
			continue
		}
		used := make([]bool, len(lt.files))
		for _, r := range lt.rows {
			if int(r.File) < len(used) {
				used[r.File] = true
			}
		}
		for i, f := range lt.files {
			if used[i] {
				add(f, cu.compDir)
			}
		}
	}
	return out, firstError(errs)
}
