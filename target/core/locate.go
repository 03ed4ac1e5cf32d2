package core

import (
	"errors"

	"github.com/sondedbg/sonde/target"
)

// LocateFile implements target.FileLocator: the file that stands in for the
// mapped file the memory map names mapped, found as for memory reads (the
// executable option, the sysroot or the recorded path, the search path, the
// build-id callback) and verified against the build-id the core holds. The
// symbol and unwind layers read a module's file through it, so that a moved
// executable is found and a rebuilt one at the recorded path is refused.
// A file that cannot be used is reported once in Problems, whether or not
// memory reads needed it.
func (c *Core) LocateFile(proc *target.Context, mapped string) (string, error) {
	c.ensureFiles()
	p, _ := trimDeleted(mapped)
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	var mf *MappedFile
	for _, f := range c.files {
		if f.Path == p {
			mf = f
			break
		}
	}
	if mf == nil {
		return "", &FileMissingError{Path: p}
	}
	c.resolveFile(mf)
	if mf.Err == nil {
		return mf.Found, nil
	}
	if !mf.Needed && !mf.reported {
		// need reported the files memory reads wanted; this one only the
		// symbols layer does.
		mf.reported = true
		kind := ProblemFileMissing
		var fc *FileChangedError
		if errors.As(mf.Err, &fc) {
			kind = ProblemFileChanged
		}
		c.problems = append(c.problems, Problem{Kind: kind, Path: mf.Path, Offset: -1, Err: mf.Err})
	}
	return "", mf.Err
}
