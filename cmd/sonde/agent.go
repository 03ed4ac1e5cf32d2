package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sondedbg/sonde/tcf"
)

func init() {
	register(verb{"agent", "run the TCF debug agent (for Eclipse, the TCF Python client, ...)", runAgent})
}

// agentServices are the functions that register TCF services on the agent's
// server, in order. Service files in this package add theirs from init():
//
//	func init() { addAgentService(func(srv *tcf.Server) { runcontrol.Register(srv, ...) }) }
//
// Only register a service whose commands work: clients abort a launch when
// an advertised command fails.
var agentServices = []func(*tcf.Server){
	func(srv *tcf.Server) { tcf.RegisterDiagnostics(srv) },
}

// addAgentService appends a service registration (see agentServices).
func addAgentService(f func(*tcf.Server)) { agentServices = append(agentServices, f) }

// shutdownTimeout bounds the graceful shutdown after SIGINT/SIGTERM
// (detaching targets, flushing channels).
const shutdownTimeout = 10 * time.Second

func runAgent(args []string) int {
	fs := newFlagSet("agent", "sonde agent [--listen TCP:127.0.0.1:1534] [--log-level L] [--read-spin D]",
		"Runs a TCF agent: TCF clients (Eclipse, the TCF Python client, vendor tools) connect to it\n"+
			"to debug programs on this machine. It listens on loopback only unless told otherwise;\n"+
			"TCF has no authentication, so anyone who can connect can run programs as this user.\n"+
			"The address actually bound is printed on stdout (useful with port 0).\n"+
			"SIGINT or SIGTERM shuts it down gracefully, detaching from every target.")
	listen := fs.String("listen", "TCP:127.0.0.1:1534", "`address` to listen on: [TCP:]host:port")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	spin := fs.Duration("read-spin", tcf.DefaultReadSpin,
		"how long a channel keeps polling for the client's next command before it sleeps (`duration`; 0: never):\n"+
			"shorter request/reply round trips for at most that much CPU per burst of commands")
	keepAttached := fs.Bool("keep-attached", false,
		"keep processes attached when the clients that held them disconnect (default: detach them, as the last client leaves)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "agent takes no arguments")
	}
	agentKeepAttached = *keepAttached
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return usageError(fs, fmt.Sprintf("bad --log-level %q: want debug, info, warn or error", *level))
	}
	hostPort, err := parseListenAddr(*listen)
	if err != nil {
		return usageError(fs, err.Error())
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	if !isLoopback(hostPort) {
		log.Warn("listening on a non-loopback address: TCF has no authentication; " +
			"anyone who can reach this port can control programs as this user")
	}

	if *spin < 0 {
		return usageError(fs, "--read-spin must not be negative")
	}
	readSpin := *spin
	if readSpin == 0 {
		readSpin = -1 // tcf.Config: 0 is the default, negative is never
	}
	srv := tcf.NewServer(tcf.Config{Logger: log, ReadSpin: readSpin})
	for _, f := range agentServices {
		f(srv)
	}
	l, err := net.Listen(listenNetwork(hostPort), hostPort)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde agent: %v\n", err)
		return 1
	}
	addr := "TCP:" + l.Addr().String()
	fmt.Printf("sonde agent listening on %s\n", addr)
	log.Info("agent started", "listen", addr, "agent_id", srv.AgentID(), "services", srv.ServiceNames())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(l) }()

	code := 0
	select {
	case <-ctx.Done():
		log.Info("signal received; shutting down")
	case err := <-serveErr:
		if !errors.Is(err, tcf.ErrServerClosed) {
			log.Error("accept failed; shutting down", "err", err)
			code = 1
		}
	}
	stop() // a second signal now kills the process the default way
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("shutdown incomplete", "err", err)
		return 1
	}
	log.Info("agent stopped")
	return code
}

// parseListenAddr accepts "TCP:host:port" (the C agent's -s syntax) or
// "host:port" (IPv6 hosts in brackets) and returns "host:port".
func parseListenAddr(s string) (string, error) {
	rest := s
	if strings.Count(s, ":") >= 2 && !strings.HasPrefix(s, "[") {
		transport, r, _ := strings.Cut(s, ":")
		if !strings.EqualFold(transport, "TCP") {
			return "", fmt.Errorf("bad --listen %q: only the TCP transport is supported", s)
		}
		rest = r
	}
	host, port, err := net.SplitHostPort(rest)
	if n, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || n > 65535 {
		return "", fmt.Errorf("bad --listen %q: want [TCP:]host:port", s)
	}
	return net.JoinHostPort(host, port), nil
}

// listenNetwork keeps an IPv4 address IPv4-only (Go would otherwise make
// 0.0.0.0 a dual-stack wildcard).
func listenNetwork(hostPort string) string {
	host, _, _ := net.SplitHostPort(hostPort)
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		return "tcp4"
	}
	return "tcp"
}

// isLoopback reports whether host:port names only loopback interfaces.
func isLoopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
