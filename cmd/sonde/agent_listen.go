package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sondedbg/sonde/tcf"
)

// listenSpec is one --listen: a transport as the C TCF agent names them
// (TCP, SSL, UNIX) and its address.
type listenSpec struct {
	transport string // "TCP", "SSL" or "UNIX"
	addr      string // host:port, or the socket's path
}

func (l listenSpec) String() string { return l.transport + ":" + l.addr }

// parseListen accepts TCP:host:port, SSL:host:port, UNIX:/path or host:port.
func parseListen(s string) (listenSpec, error) {
	if t, rest, ok := strings.Cut(s, ":"); ok {
		switch strings.ToUpper(t) {
		case "UNIX":
			if rest == "" {
				return listenSpec{}, fmt.Errorf("bad --listen %q: want UNIX:/path/to/socket", s)
			}
			return listenSpec{"UNIX", rest}, nil
		case "SSL":
			hp, err := parseListenAddr("TCP:" + rest)
			if err != nil {
				return listenSpec{}, fmt.Errorf("bad --listen %q: want SSL:host:port", s)
			}
			return listenSpec{"SSL", hp}, nil
		}
	}
	hp, err := parseListenAddr(s)
	if err != nil {
		return listenSpec{}, err
	}
	return listenSpec{"TCP", hp}, nil
}

// listenFlags collects repeatable --listen values.
type listenFlags []listenSpec

func (l *listenFlags) String() string {
	var s []string
	for _, x := range *l {
		s = append(s, x.String())
	}
	return strings.Join(s, ",")
}

func (l *listenFlags) Set(v string) error {
	spec, err := parseListen(v)
	if err != nil {
		return err
	}
	*l = append(*l, spec)
	return nil
}

// uidFlags collects repeatable --allow-uid values.
type uidFlags []int

func (u *uidFlags) String() string { return fmt.Sprint([]int(*u)) }

func (u *uidFlags) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("want a numeric uid, got %q", v)
	}
	*u = append(*u, int(n))
	return nil
}

// tlsFiles are the --tls-* flags.
type tlsFiles struct{ cert, key, clientCA string }

// checkListen refuses what must not start: plain TCP that is not loopback
// (unless insecure), and SSL without its files.
func checkListen(specs []listenSpec, tf tlsFiles, insecure bool) error {
	for _, l := range specs {
		switch l.transport {
		case "TCP":
			if !isLoopback(l.addr) && !insecure {
				return fmt.Errorf("refusing plain TCP on the non-loopback address %s: anyone who can reach it "+
					"could run programs as this user. Use --listen SSL:%s with --tls-cert, --tls-key and "+
					"--tls-client-ca, or --insecure if the network is trusted", l.addr, l.addr)
			}
		case "SSL":
			if tf.cert == "" || tf.key == "" || tf.clientCA == "" {
				return fmt.Errorf("--listen %s needs --tls-cert, --tls-key and --tls-client-ca (clients must present a certificate)", l)
			}
		}
	}
	return nil
}

// listenOn opens the listener of one spec. A Unix-domain socket is made
// mode 0600 (umask while binding, so it never exists more open); a stale
// socket file nobody listens on is replaced, anything else at the path is
// an error.
func listenOn(l listenSpec, tlsConf *tls.Config) (net.Listener, error) {
	switch l.transport {
	case "UNIX":
		if err := removeStaleSocket(l.addr); err != nil {
			return nil, err
		}
		old := syscall.Umask(0o177)
		ln, err := net.Listen("unix", l.addr)
		syscall.Umask(old)
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(l.addr, 0o600); err != nil {
			ln.Close()
			return nil, err
		}
		return ln, nil
	case "SSL":
		ln, err := net.Listen(listenNetwork(l.addr), l.addr)
		if err != nil {
			return nil, err
		}
		return tls.NewListener(ln, tlsConf), nil
	}
	return net.Listen(listenNetwork(l.addr), l.addr)
}

// removeStaleSocket removes a socket file left by an agent that died.
func removeStaleSocket(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%s: another agent is listening there", path)
	}
	return os.Remove(path)
}

// boundAddr is the address line printed for a listener.
func boundAddr(l listenSpec, ln net.Listener) string {
	if l.transport == "UNIX" {
		return "UNIX:" + l.addr
	}
	return l.transport + ":" + ln.Addr().String()
}

// agentAccess is the admission policy of the agent's listeners.
func agentAccess(allow []int, insecure bool) *tcf.AccessPolicy {
	return &tcf.AccessPolicy{UID: os.Geteuid(), AllowUIDs: allow, Insecure: insecure}
}
