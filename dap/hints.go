package dap

import (
	"strings"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/unwind"
)

// The console's "no debug information for X; install its debug package"
// hints: one per file a frame shown in a stackTrace is in, when that frame
// is first shown, as `sonde stack` prints them. The session opens every
// module for a lookup by name (a function breakpoint, a watch of a global,
// a call site's callee), which is no reason to tell an editor user about
// libgcrypt: attached to Debian's redis-server, the console listed fifteen
// libraries none of whose code was on any stack.

// sessionWarning reports whether a session warning goes to the console at
// once: "cannot read symbols" errors do; debug-information hints wait for
// a frame in their file (frameHint).
func sessionWarning(msg string) bool { return strings.HasPrefix(msg, "sonde: ") }

// frameHint writes the hint of the file um (a shown frame's module), the
// first time a frame in it is shown.
func (d *debuggee) frameHint(um *unwind.Module) {
	if um == nil {
		return
	}
	m, ok := um.Client.(*session.Module)
	if !ok || m == nil || m.VDSO {
		return
	}
	d.hintMu.Lock()
	if d.hinted == nil {
		d.hinted = map[*session.Module]bool{}
	}
	seen := d.hinted[m]
	d.hinted[m] = true
	d.hintMu.Unlock()
	if seen {
		return
	}
	if b, _ := d.sess.Binary(m); b != nil {
		if h := b.Hint(); h != "" {
			d.s.output("console", h+"\n")
		}
	}
}
