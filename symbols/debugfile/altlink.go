package debugfile

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// DebugAltLink returns the contents of f's .gnu_debugaltlink section: the
// path of the supplementary debug file that dwz moved shared DWARF into
// (DW_FORM_GNU_ref_alt / DW_FORM_GNU_strp_alt point there) and that file's
// build-id. It returns "" and no error when f has no such section.
func DebugAltLink(f *elf.File) (path string, buildID []byte, err error) {
	s := f.Section(".gnu_debugaltlink")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return "", nil, nil
	}
	if s.Size > maxDebugLink {
		return "", nil, &FormatError{What: ".gnu_debugaltlink", Msg: fmt.Sprintf("section size %d exceeds %d bytes", s.Size, maxDebugLink)}
	}
	data, err := s.Data()
	if err != nil {
		return "", nil, fmt.Errorf("read .gnu_debugaltlink: %w", err)
	}
	return ParseDebugAltLink(data)
}

// ParseDebugAltLink decodes a .gnu_debugaltlink section: a NUL-terminated
// path (absolute, or relative to the debug file's directory) followed
// directly by the supplementary file's build-id.
func ParseDebugAltLink(data []byte) (string, []byte, error) {
	nul := bytes.IndexByte(data, 0)
	if nul <= 0 {
		return "", nil, &FormatError{What: ".gnu_debugaltlink", Offset: int64(max(nul, 0)), Msg: "missing or empty NUL-terminated path"}
	}
	id := data[nul+1:]
	if len(id) == 0 || len(id) > 64 {
		return "", nil, &FormatError{What: ".gnu_debugaltlink", Offset: int64(nul + 1), Msg: fmt.Sprintf("build-id of %d bytes", len(id))}
	}
	return string(data[:nul]), bytes.Clone(id), nil
}

// AltFile is an opened supplementary (dwz) debug file.
type AltFile struct {
	Path  string
	File  *elf.File
	Tried []Attempt
	osf   *os.File
}

// Close releases the file.
func (a *AltFile) Close() error {
	if a == nil || a.osf == nil {
		return nil
	}
	err := a.osf.Close()
	a.osf = nil
	return err
}

// FindAltFile opens the supplementary debug file that debugFile (found at
// debugPath) refers to through .gnu_debugaltlink, as gdb does: the recorded
// path (relative paths from debugPath's directory), then
// <dir>/.build-id/xx/yyyy.debug in each debug directory, then debuginfod.
// Every candidate must carry the recorded build-id. It returns nil and no
// error when debugFile has no .gnu_debugaltlink; when one is recorded but
// none of the candidates fits, the error lists them.
func FindAltFile(ctx context.Context, debugPath string, debugFile *elf.File, opts Options) (*AltFile, error) {
	name, id, err := DebugAltLink(debugFile)
	if err != nil {
		return nil, &Error{Path: debugPath, Op: "read .gnu_debugaltlink", Err: err}
	}
	if name == "" {
		return nil, nil
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(filepath.Dir(debugPath), name)
	}
	dirs := opts.DebugDirs
	if dirs == nil {
		dirs = []string{DefaultDebugDir}
	}
	r := &Result{binPath: debugPath}
	check := func(c *elf.File, _ string) error { return checkBuildID(c, id) }
	found := r.try(MethodDebugLink, name, check)
	if beside := filepath.Join(filepath.Dir(debugPath), filepath.Base(name)); !found && beside != name {
		// The binary and its supplementary file moved together (a
		// core's --exe from a copied build tree); the build-id check
		// keeps a stranger out.
		found = r.try(MethodDebugLink, beside, check)
	}
	h := hex.EncodeToString(id)
	for _, d := range dirs {
		if found || len(h) < 3 {
			break
		}
		found = r.try(MethodBuildID, filepath.Join(d, ".build-id", h[:2], h[2:]+".debug"), check)
	}
	if !found && opts.Debuginfod != nil {
		if p, err := opts.Debuginfod.DebugInfo(ctx, id); err != nil {
			r.Tried = append(r.Tried, Attempt{Method: MethodDebuginfod, Err: err})
		} else {
			found = r.try(MethodDebuginfod, p, check)
		}
	}
	if !found {
		return nil, &Error{Path: debugPath, Op: "find .gnu_debugaltlink file " + name,
			Err: fmt.Errorf("no candidate with build-id %s (tried %d)", h, len(r.Tried))}
	}
	return &AltFile{Path: r.Path, File: r.File, Tried: r.Tried, osf: r.opened}, nil
}

// DWPPath returns the split-DWARF package file for a binary, gdb's
// convention: "<binary>.dwp" beside the binary, else beside its separate
// debug file (debugPath may be ""). It returns "" when neither exists.
func DWPPath(binPath, debugPath string) string {
	for _, p := range []string{binPath, debugPath} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p + ".dwp"); err == nil && st.Mode().IsRegular() {
			return p + ".dwp"
		}
	}
	return ""
}
