package target

import (
	"fmt"

	"github.com/sondedbg/sonde/translate"
)

// RestoreHooker is implemented by backends that run code of sonde's own in a
// target (displaced steps, probes' trampolines) and translate every stop
// inside it back to the application (package translate): a library user's
// restore-state hook runs for each such translation, after sonde's own, to
// put back what the user's own instrumentation clobbered.
type RestoreHooker interface {
	AddRestoreHook(proc *Context, f translate.RestoreFunc) error
}

// AddRestoreHook registers a restore-state hook for proc's address space
// (translate.RestoreFunc says when it runs and what it may do). Backends
// that never run generated code (cores) have nothing to translate: they
// return an error.
func (t *Target) AddRestoreHook(proc *Context, f translate.RestoreFunc) error {
	h, ok := t.backend.(RestoreHooker)
	if !ok {
		return fmt.Errorf("%w: this target runs no generated code, so it has no restore-state hooks", ErrUnsupported)
	}
	return h.AddRestoreHook(proc.Process(), f)
}
