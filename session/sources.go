package session

import (
	"path/filepath"

	"github.com/sondedbg/sonde/target"
)

// Source is a source file a module was compiled from: the primary file of
// one of its compilation units, or a header its line tables have code in.
type Source struct {
	// Path is the file's path, made absolute against the unit's
	// compilation directory when the compiler recorded it relative.
	Path string
	// Module is the module whose unit names the file.
	Module *Module
}

// Sources returns the source files of the loaded modules of process c that
// have DWARF, each once, in module order: what a debugger's "loaded sources"
// view lists. Modules without symbols contribute nothing.
func (s *Session) Sources(c *target.Context) ([]Source, error) {
	mods, err := s.Modules(c)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Source
	for _, m := range mods {
		b, _ := s.Binary(m)
		if b == nil {
			continue
		}
		files, _ := b.SourceFiles()
		for _, u := range b.CompileUnits() {
			p := u.Name
			if !filepath.IsAbs(p) && u.CompDir != "" {
				p = filepath.Join(u.CompDir, p)
			}
			files = append(files, filepath.Clean(p))
		}
		for _, p := range files {
			if seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, Source{Path: p, Module: m})
		}
	}
	return out, nil
}
