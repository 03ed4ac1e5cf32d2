package main

// The warnings `sonde stack` prints about missing debug information: one
// per file that has frames in the output, not one per file the process
// mapped. Finding tail-call targets and entry values looks functions up by
// name in every module, which opens them all; a user reading redis's
// stacks need not hear that libgcrypt has no debug package. The vDSO gets
// no hint: no Debian package installs it.

import (
	"fmt"

	"github.com/sondedbg/sonde/session"
)

// debugHints returns the messages for the modules the report's frames are
// in, in the order they first appear.
func debugHints(sess *session.Session, threads []threadStack) []string {
	var out []string
	seen := map[*session.Module]bool{}
	for _, th := range threads {
		for _, m := range th.mods {
			if seen[m] {
				continue
			}
			seen[m] = true
			b, err := sess.Binary(m)
			switch {
			case b == nil && err != nil:
				out = append(out, fmt.Sprintf("sonde: cannot read symbols of %s: %v", m.Name, err))
			case b != nil && !m.VDSO:
				if h := b.Hint(); h != "" {
					out = append(out, h)
				}
			}
		}
	}
	return out
}
