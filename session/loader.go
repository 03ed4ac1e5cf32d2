package session

import (
	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/target"
)

// RDebug is the dynamic linker's struct r_debug of a process: where its
// link map starts, the function it calls on every change of the loaded
// objects (r_brk) and the state of the change (r_state).
type RDebug = modules.RDebug

// RDebug reads the r_debug of c's process, found through its executable's
// DT_DEBUG; nil without an error for a static executable, or before the
// dynamic linker has filled it in.
func (s *Session) RDebug(c *target.Context) (*RDebug, error) {
	mods, err := s.Modules(c)
	if err != nil {
		return nil, err
	}
	return modules.FindRDebug(c.Process(), mods.Main())
}
