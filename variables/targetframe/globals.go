package targetframe

import (
	"fmt"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/variables"
)

// FindGlobal returns the definition of the global variable name in the first
// of mods whose debug information defines it, with that module's reader and
// load bias. A declaration without a location (an extern) does not count:
// the variable lives in the module that defines it. Modules without DWARF
// (and the vDSO) are passed over. binary gives a module's symbol file
// (Session.Binary).
func FindGlobal(binary func(*modules.Module) (*symbols.Binary, error), mods []*modules.Module, name string) (*variables.Variable, *variables.Reader, uint64, error) {
	for _, m := range mods {
		if m.VDSO {
			continue
		}
		b, _ := binary(m)
		if b == nil || !b.HasDWARF() {
			continue
		}
		r, err := variables.For(b)
		if err != nil {
			continue
		}
		if vs, err := r.Globals(name); err == nil && vs[0].Loc.Kind != variables.LocNone {
			return vs[0], r, m.Bias, nil
		}
	}
	return nil, nil, 0, fmt.Errorf("no global %q", name)
}
