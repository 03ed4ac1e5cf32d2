package main

import (
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/symbols"
)

// processResolver symbolizes run-time addresses of a live process through
// session.ProcessSymbols (its memory map, no ptrace needed), with files
// spelled as `sonde stack` (and gdb) spell them.
type processResolver struct {
	ps *session.ProcessSymbols
}

func newProcessResolver(pid int, opts *symbols.Options) (*processResolver, error) {
	ps, err := session.OpenProcessSymbols(pid, opts)
	if err != nil {
		return nil, err
	}
	return &processResolver{ps: ps}, nil
}

func (r *processResolver) frames(dst []symbols.Frame, addr uint64) ([]symbols.Frame, string, error) {
	frames, loc, err := r.ps.AppendFrames(dst, addr)
	for i := len(dst); i < len(frames); i++ {
		if frames[i].File != "" {
			frames[i].File = gdbFileAt(loc.Binary, loc.Link, frames[i].File)
		}
	}
	return frames, loc.Module, err
}

func (r *processResolver) addrWidth() int { return 16 }

// hint reports, once per module, how to get debug info it lacks.
func (r *processResolver) hint() string { return r.ps.Hint() }

func (r *processResolver) close() { r.ps.Close() }
