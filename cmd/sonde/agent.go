package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
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
// server, in order: Diagnostics here, then (agent_debug.go's init, through
// addAgentService) every debug service of tcf/services over one live target,
// all at once with services.RegisterAll.
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
	fs := newFlagSet("agent", "sonde agent [--listen TCP:127.0.0.1:1534] [--allow-uid UID] [--read-only] [--log-level L] [--read-spin D]",
		"Runs a TCF agent: TCF clients (Eclipse, the TCF Python client, vendor tools) connect to it\n"+
			"to debug programs on this machine. It listens on loopback only unless told otherwise.\n"+
			"Who may connect: a loopback TCP or Unix-domain client only when it runs as the agent's\n"+
			"user or a user named with --allow-uid; a remote client only over SSL (TLS 1.3) with a\n"+
			"client certificate trusted by --tls-client-ca. Plain TCP on other addresses needs --insecure.\n"+
			"The address actually bound is printed on stdout (useful with port 0).\n"+
			"SIGINT or SIGTERM shuts it down gracefully, detaching from every target.")
	var listens listenFlags
	fs.Var(&listens, "listen", "`address` to listen on (repeatable): [TCP:]host:port, SSL:host:port or UNIX:/path\n"+
		"(default TCP:127.0.0.1:1534)")
	var allow uidFlags
	fs.Var(&allow, "allow-uid", "also serve local clients running as `UID` (repeatable)")
	insecure := fs.Bool("insecure", false, "allow plain TCP on non-loopback addresses, without authentication")
	var tf tlsFiles
	fs.StringVar(&tf.cert, "tls-cert", "", "PEM certificate `file` of the SSL transport (e.g. /etc/tcf/ssl/local.cert)")
	fs.StringVar(&tf.key, "tls-key", "", "PEM private key `file` of the SSL transport (e.g. /etc/tcf/ssl/local.priv)")
	fs.StringVar(&tf.clientCA, "tls-client-ca", "", "PEM `file or directory` of trusted client certificates or CAs\n"+
		"(a directory: every *.cert, *.crt and *.pem in it, as the C agent's /etc/tcf/ssl)")
	readOnly := fs.Bool("read-only", false, "refuse everything that writes: Processes.start, Terminals, memory and\n"+
		"register writes, FileSystem writes, Streams.write")
	helloTimeout := fs.Duration("hello-timeout", tcf.DefaultHelloTimeout,
		"close a connection that has not sent its Locator Hello within `duration`")
	perPeer := fs.Int("max-channels-per-peer", tcf.DefaultMaxChannels/2,
		"open channels one peer (a local user, or a remote address) may hold at `most`")
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
	if len(listens) == 0 {
		listens = listenFlags{{"TCP", "127.0.0.1:1534"}}
	}
	if err := checkListen(listens, tf, *insecure); err != nil {
		return usageError(fs, err.Error())
	}
	if *perPeer <= 0 {
		return usageError(fs, "--max-channels-per-peer must be positive")
	}
	if *helloTimeout <= 0 {
		return usageError(fs, "--hello-timeout must be positive")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	if *insecure {
		log.Warn("--insecure: plain TCP peers on non-loopback addresses are served without authentication; " +
			"anyone who can reach the port can control programs as this user")
	}
	var tlsConf *tls.Config
	if tf.cert != "" || tf.key != "" || tf.clientCA != "" {
		c, err := tcf.ServerTLS(tf.cert, tf.key, tf.clientCA)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sonde agent: %v\n", err)
			return 1
		}
		tlsConf = c
	}
	limitAgentMemory()

	if *spin < 0 {
		return usageError(fs, "--read-spin must not be negative")
	}
	readSpin := *spin
	if readSpin == 0 {
		readSpin = -1 // tcf.Config: 0 is the default, negative is never
	}
	cfg := tcf.Config{Logger: log, ReadSpin: readSpin, HelloTimeout: *helloTimeout,
		MaxChannelsPerPeer: *perPeer,
		Admit:              agentAccess(allow, *insecure).Admit}
	if *readOnly {
		cfg.Refused = tcf.ReadOnlyCommands()
	}
	srv := tcf.NewServer(cfg)
	for _, f := range agentServices {
		f(srv)
	}
	var lns []net.Listener
	for _, spec := range listens {
		l, err := listenOn(spec, tlsConf)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			fmt.Fprintf(os.Stderr, "sonde agent: %v\n", err)
			return 1
		}
		lns = append(lns, l)
		addr := boundAddr(spec, l)
		fmt.Printf("sonde agent listening on %s\n", addr)
		log.Info("agent started", "listen", addr, "agent_id", srv.AgentID(), "services", srv.ServiceNames(),
			"allow_uids", append([]int{os.Geteuid()}, allow...), "read_only", *readOnly)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	serveErr := make(chan error, len(lns))
	for _, l := range lns {
		go func() { serveErr <- srv.Serve(l) }()
	}

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
	for _, spec := range listens {
		if spec.transport == "UNIX" {
			os.Remove(spec.addr)
		}
	}
	log.Info("agent stopped")
	return code
}

// agentMemoryLimit is the heap size past which the agent's garbage
// collector works harder (unless GOMEMLIMIT says otherwise): with the
// server's budgets on buffered input and queued output it keeps the agent
// under 300 MB whatever its peers send.
const agentMemoryLimit = 192 << 20

func limitAgentMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(agentMemoryLimit)
	}
}

// parseListenAddr accepts "TCP:host:port" (the C agent's -s syntax) or
// "host:port" (IPv6 hosts in brackets) and returns "host:port"; see
// parseListen for the other transports.
func parseListenAddr(s string) (string, error) {
	rest := s
	if strings.Count(s, ":") >= 2 && !strings.HasPrefix(s, "[") {
		transport, r, _ := strings.Cut(s, ":")
		if !strings.EqualFold(transport, "TCP") {
			return "", fmt.Errorf("bad --listen %q: want TCP:host:port, SSL:host:port or UNIX:/path", s)
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
