package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/sondedbg/sonde/dap"
)

func init() {
	register(verb{"dap", "serve the Debug Adapter Protocol (VS Code, nvim-dap, Zed, Helix, Emacs dape)", runDAP})
}

const dapHelp = `Runs a Debug Adapter Protocol server: editors start it and drive it to debug
C, C++ and Rust programs, live (launch, attach) or from a core file (attach
with coreFile). By default it speaks DAP over stdin and stdout, as editors
start adapters; nothing else is ever written to stdout. With --listen it
serves each client that connects (a loopback TCP port or a Unix-domain
socket, for clients running as this user) and prints the address it bound on
stderr. When a client goes away without disconnecting, a program it
launched is killed and one it attached to is detached. SIGINT or SIGTERM
does the same for every client, then sonde exits.`

func runDAP(args []string) int {
	fs := newFlagSet("dap", "sonde dap [--listen TCP:127.0.0.1:PORT | UNIX:/path]", dapHelp)
	var listen listenFlags
	fs.Var(&listen, "listen", "serve clients that connect to `address` (TCP:127.0.0.1:PORT or UNIX:/path) instead of stdin/stdout")
	debugDirs := multiFlag{}
	fs.Var(&debugDirs, "debug-dir", "also look for separate debug files in `DIR` (repeatable)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "dap takes no arguments")
	}
	if len(listen) > 1 {
		return usageError(fs, "give one --listen")
	}
	relaxGC()
	dapProcs()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "sonde dap: "+format+"\n", a...) }
	opts := dap.Options{DebugDirs: debugDirs, Log: logf}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if len(listen) == 0 {
		srv := dap.NewServer(opts)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(os.Stdin, os.Stdout) }()
		select {
		case err := <-done:
			if err != nil {
				logf("%v", err)
				return 1
			}
		case s := <-sigs:
			srv.Close()
			logf("%v: the debugged program was left as its launch or attach implies", s)
			return 1
		}
		return 0
	}
	spec := listen[0]
	if spec.transport == "SSL" {
		return usageError(fs, "--listen SSL is not supported by dap; use TCP on loopback or UNIX")
	}
	if err := checkListen(listen, tlsFiles{}, false); err != nil {
		return usageError(fs, err.Error())
	}
	ln, err := listenOn(spec, nil)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer func() {
		ln.Close()
		if spec.transport == "UNIX" {
			os.Remove(spec.addr)
		}
	}()
	fmt.Fprintf(os.Stderr, "sonde dap listening on %s\n", boundAddr(spec, ln))
	admit := agentAccess(nil, false).Admit
	var mu sync.Mutex
	servers := map[*dap.Server]bool{}
	go func() {
		<-sigs
		mu.Lock()
		for s := range servers {
			s.Close()
		}
		mu.Unlock()
		ln.Close()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return 0 // closed by a signal
		}
		if _, err := admit(conn); err != nil {
			logf("refused %s: %v", conn.RemoteAddr(), err)
			conn.Close()
			continue
		}
		srv := dap.NewServer(opts)
		mu.Lock()
		servers[srv] = true
		mu.Unlock()
		go func() {
			defer conn.Close()
			if err := srv.Serve(conn, conn); err != nil {
				logf("client %s: %v", conn.RemoteAddr(), err)
			}
			mu.Lock()
			delete(servers, srv)
			mu.Unlock()
		}()
	}
}
