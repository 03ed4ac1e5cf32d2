package main

import (
	"strconv"

	"github.com/sondedbg/sonde/session"
)

// prepareStack starts reading ahead, in the background, the symbols every
// stack of a live process needs (its C library's and its executable's:
// Session.PrepareProcess) while sonde attaches to it and stops its
// threads (with vars, also the variables readers the frames' arguments
// are read with). On a machine whose persisted cache is empty that is most of a
// first `sonde stack`'s work: inflating the C library's compressed debug
// sections and indexing its units, which would otherwise start only when
// the first frame asks for a name. A core's files are opened as its
// frames need them (the core says which files stand in for the mapped
// ones).
func prepareStack(sess *session.Session, corePath, pidArg string, vars bool) {
	if corePath != "" {
		return
	}
	pid, err := strconv.Atoi(pidArg)
	if err != nil || pid <= 0 {
		return
	}
	go sess.PrepareProcess(pid, vars)
}
