package tcf

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Peer is who is at the other end of a channel, as admission found out.
type Peer struct {
	// Key is what per-peer channel limits count by: "uid:N" for a local
	// user, "addr:IP" for a remote peer; empty for none (ServeConn).
	Key string
	// UID is the local peer's user ID, -1 when not known (remote peers).
	UID int
	// Name describes the peer for logs (a TLS certificate's subject).
	Name string
}

// String describes the peer of conn for logs.
func (p Peer) String(conn net.Conn) string {
	s := conn.RemoteAddr().String()
	if s == "" || s == "@" {
		s = "unix"
	}
	if p.Key != "" {
		s += " (" + p.Key + ")"
	}
	if p.Name != "" {
		s += " " + p.Name
	}
	return s
}

// AccessPolicy decides who may use the agent (Config.Admit):
//   - a Unix-domain peer (SO_PEERCRED) or a loopback TCP peer (its socket's
//     owner, looked up in /proc/net/tcp and tcp6) is served when its uid is
//     the agent's own or one of AllowUIDs; when it cannot be determined,
//     it is refused;
//   - a TLS peer was authenticated by its client certificate in the
//     handshake (the tls.Config must require and verify one): served;
//   - any other TCP peer only with Insecure.
//
// Loopback is not a user boundary: without this any local user could run
// programs as the agent's user (often root) through Processes.start.
type AccessPolicy struct {
	UID       int    // the agent's uid (os.Geteuid())
	AllowUIDs []int  // other local users allowed
	Insecure  bool   // serve plain TCP from other hosts (no authentication)
	ProcNet   string // /proc/net by default (tests)
}

// ErrPeerRefused is wrapped by the errors of refused peers.
var ErrPeerRefused = errors.New("peer refused")

func (p *AccessPolicy) allowed(uid int) bool {
	return uid == p.UID || slices.Contains(p.AllowUIDs, uid)
}

// Admit identifies conn's peer and reports whether it may be served (use
// it as Config.Admit). A TLS connection is handshaken here.
func (p *AccessPolicy) Admit(conn net.Conn) (Peer, error) {
	switch c := conn.(type) {
	case *tls.Conn:
		if err := c.HandshakeContext(context.Background()); err != nil {
			return Peer{}, fmt.Errorf("%w: TLS handshake: %v", ErrPeerRefused, err)
		}
		st := c.ConnectionState()
		if len(st.PeerCertificates) == 0 {
			return Peer{}, fmt.Errorf("%w: TLS peer sent no certificate", ErrPeerRefused)
		}
		ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
		return Peer{Key: "addr:" + ap.Addr().Unmap().String(), UID: -1,
			Name: "cert " + st.PeerCertificates[0].Subject.String()}, nil
	case *net.UnixConn:
		uid, err := unixPeerUID(c)
		if err != nil {
			return Peer{}, fmt.Errorf("%w: cannot tell the Unix-domain peer's user: %v", ErrPeerRefused, err)
		}
		return p.localPeer(uid)
	case *net.TCPConn:
		remote, err1 := netip.ParseAddrPort(c.RemoteAddr().String())
		local, err2 := netip.ParseAddrPort(c.LocalAddr().String())
		if err1 != nil || err2 != nil {
			return Peer{}, fmt.Errorf("%w: unreadable addresses %v %v", ErrPeerRefused, c.RemoteAddr(), c.LocalAddr())
		}
		if !remote.Addr().Unmap().IsLoopback() {
			if p.Insecure {
				return Peer{Key: "addr:" + remote.Addr().Unmap().String(), UID: -1}, nil
			}
			return Peer{}, fmt.Errorf("%w: plain TCP from another host (use SSL, or --insecure)", ErrPeerRefused)
		}
		uid, err := p.tcpPeerUID(local, remote)
		if err != nil {
			return Peer{}, fmt.Errorf("%w: cannot tell the loopback peer's user: %v", ErrPeerRefused, err)
		}
		return p.localPeer(uid)
	}
	return Peer{}, fmt.Errorf("%w: unsupported connection type %T", ErrPeerRefused, conn)
}

func (p *AccessPolicy) localPeer(uid int) (Peer, error) {
	if !p.allowed(uid) {
		return Peer{}, fmt.Errorf("%w: uid %d is not the agent's (%d) nor allowed with --allow-uid", ErrPeerRefused, uid, p.UID)
	}
	return Peer{Key: "uid:" + strconv.Itoa(uid), UID: uid}, nil
}

// unixPeerUID is the uid of the process that connected (SO_PEERCRED:
// recorded by the kernel at connect, not claimed by the peer).
func unixPeerUID(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", serr)
	}
	return int(cred.Uid), nil
}

// tcpPeerUID finds the owner of the peer's end of a loopback connection:
// the socket whose local address is our remote one and whose remote
// address is our local one. IPv4 peers may own an IPv4 socket (tcp) or a
// dual-stack IPv6 one (tcp6, with a mapped address). It asks sock_diag
// (an exact lookup), and reads /proc/net/tcp and tcp6 only where sock_diag
// is not available, or when ProcNet is set.
func (p *AccessPolicy) tcpPeerUID(local, remote netip.AddrPort) (int, error) {
	type try struct {
		file          string
		family        uint8
		local, remote netip.AddrPort
	}
	var tries []try
	l4, r4 := unmapPort(local), unmapPort(remote)
	if l4.Addr().Is4() && r4.Addr().Is4() {
		tries = append(tries, try{"tcp", unix.AF_INET, r4, l4}, try{"tcp6", unix.AF_INET6, mapPort(r4), mapPort(l4)})
	} else {
		tries = append(tries, try{"tcp6", unix.AF_INET6, remote, local})
	}
	dir := p.ProcNet
	if dir == "" {
		diagOK := true
		for _, t := range tries {
			uid, found, err := diagSocketUID(t.family, t.local, t.remote)
			if err != nil {
				diagOK = false
				break
			}
			if found {
				return uid, nil
			}
		}
		if diagOK {
			return 0, fmt.Errorf("sock_diag knows no socket %v -> %v (peer gone?)", remote, local)
		}
		dir = "/proc/net"
	}
	var errs []error
	for _, t := range tries {
		f, err := os.Open(dir + "/" + t.file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, found, err := FindSocketUID(f, t.local, t.remote)
		f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", dir, t.file, err))
			continue
		}
		if found {
			return uid, nil
		}
	}
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	return 0, fmt.Errorf("no socket %v -> %v in %s/tcp or tcp6 (peer gone?)", remote, local, dir)
}

func unmapPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func mapPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom16(ap.Addr().As16()), ap.Port())
}

// ProcNetError reports a malformed /proc/net/tcp line.
type ProcNetError struct {
	Line   int
	Reason string
}

func (e *ProcNetError) Error() string {
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

// maxProcNetLine bounds one line of /proc/net/tcp (they are ~150 bytes).
const maxProcNetLine = 4096

// FindSocketUID reads a /proc/net/tcp or tcp6 table from r and returns the
// uid owning the live socket with the given local and remote addresses.
// Sockets in TIME_WAIT and those without an inode (no owner any more; the
// kernel shows them as uid 0) never match.
func FindSocketUID(r io.Reader, local, remote netip.AddrPort) (uid int, found bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxProcNetLine)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if line == 1 && f[0] == "sl" {
			continue // the header
		}
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
		if len(f) < 10 {
			return 0, false, &ProcNetError{line, fmt.Sprintf("%d fields, want at least 10", len(f))}
		}
		la, err := parseProcAddr(f[1])
		if err != nil {
			return 0, false, &ProcNetError{line, "local address: " + err.Error()}
		}
		ra, err := parseProcAddr(f[2])
		if err != nil {
			return 0, false, &ProcNetError{line, "remote address: " + err.Error()}
		}
		if la != local || ra != remote {
			continue
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return 0, false, &ProcNetError{line, fmt.Sprintf("state %q", f[3])}
		}
		u, err := strconv.ParseUint(f[7], 10, 32)
		if err != nil {
			return 0, false, &ProcNetError{line, fmt.Sprintf("uid %q", f[7])}
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return 0, false, &ProcNetError{line, fmt.Sprintf("inode %q", f[9])}
		}
		const timeWait = 6
		if st == timeWait || inode == 0 {
			continue
		}
		return int(u), true, nil
	}
	if err := sc.Err(); err != nil {
		return 0, false, &ProcNetError{line + 1, err.Error()}
	}
	return 0, false, nil
}

// parseProcAddr decodes "0100007F:0016" (IPv4) or 32 hex digits and a port
// (IPv6): the address as the kernel's 32-bit words in host byte order, the
// port as a hexadecimal number.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, ps, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q has no ':'", s)
	}
	port, err := strconv.ParseUint(ps, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q", ps)
	}
	if len(h) != 8 && len(h) != 32 {
		return netip.AddrPort{}, fmt.Errorf("address %q: want 8 or 32 hex digits", h)
	}
	raw, err := hex.DecodeString(h)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: not hex", h)
	}
	// Each 32-bit word was printed as a number: its bytes are reversed
	// from memory order on a little-endian host.
	var b [16]byte
	for i := 0; i+4 <= len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	if len(raw) == 4 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(port)), nil
	}
	return netip.AddrPortFrom(netip.AddrFrom16(b), uint16(port)), nil
}
