package main

import (
	"fmt"
	"os"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/services"
)

// The agent's debug services run over one live target that every channel
// shares; shutting the agent down closes it (every patch removed, every
// process detached).
func init() {
	addAgentService(func(srv *tcf.Server) {
		t, err := ptrace.New()
		if err != nil {
			fmt.Fprintf(os.Stderr, "sonde agent: cannot debug processes here: %v\n", err)
			return
		}
		sess := session.New(t, session.Options{Warn: func(msg string) { srv.Logger().Info(msg) }})
		a := services.New(srv, sess)
		a.SetKeepAttached(agentKeepAttached)
		a.RegisterAll()
	})
}

// agentKeepAttached is the agent's --keep-attached: processes stay attached
// when the clients holding them disconnect.
var agentKeepAttached bool
