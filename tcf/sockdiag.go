package tcf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// The peer's socket is found with the kernel's sock_diag netlink interface
// when it is there: an exact lookup by address and port. Reading
// /proc/net/tcp instead makes the kernel print every TCP socket of the
// namespace (thousands of lines on a busy machine: 9-50 ms per connection,
// tcf/BENCHMARKS.md), which a flood of connections would turn into a way to
// keep the agent busy.

// Sizes of the netlink structures (linux/netlink.h, linux/inet_diag.h).
const (
	nlmsgHdrLen   = 16
	inetDiagReqV2 = 56
	inetDiagMsg   = 72
	tcpTimeWait   = 6
)

// errNoDiag means sock_diag cannot be used here (fall back to /proc).
var errNoDiag = errors.New("sock_diag unavailable")

// diagSocketUID asks the kernel for the owner of the TCP socket with local
// address src and remote address dst (family AF_INET or AF_INET6).
func diagSocketUID(family uint8, src, dst netip.AddrPort) (uid int, found bool, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %v", errNoDiag, err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(time.Second))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Sendto(fd, diagRequest(family, src, dst), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false, fmt.Errorf("%w: send: %v", errNoDiag, err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, false, fmt.Errorf("%w: receive: %v", errNoDiag, err)
	}
	return ParseDiagReply(buf[:n])
}

// diagRequest is a SOCK_DIAG_BY_FAMILY request for one TCP socket.
func diagRequest(family uint8, src, dst netip.AddrPort) []byte {
	b := make([]byte, nlmsgHdrLen+inetDiagReqV2)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	r := b[nlmsgHdrLen:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(1<<tcpTimeWait))
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], src.Port())
	binary.BigEndian.PutUint16(id[2:], dst.Port())
	putAddr(id[4:20], src.Addr())
	putAddr(id[20:36], dst.Addr())
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	return b
}

func putAddr(dst []byte, a netip.Addr) {
	if a.Is4() {
		v := a.As4()
		copy(dst, v[:])
		return
	}
	v := a.As16()
	copy(dst, v[:])
}

// DiagError reports a malformed sock_diag reply.
type DiagError struct {
	Offset int
	Reason string
}

func (e *DiagError) Error() string {
	return fmt.Sprintf("sock_diag reply byte %d: %s", e.Offset, e.Reason)
}

// ParseDiagReply decodes the kernel's answer to one sock_diag request: the
// socket's owner, or found=false when there is no such live socket (an
// ENOENT error message, or a socket in TIME_WAIT or without an inode).
func ParseDiagReply(b []byte) (uid int, found bool, err error) {
	ne := binary.NativeEndian
	if len(b) < nlmsgHdrLen {
		return 0, false, &DiagError{0, fmt.Sprintf("%d bytes, shorter than a netlink header", len(b))}
	}
	n := int(ne.Uint32(b[0:]))
	typ := ne.Uint16(b[4:])
	if n < nlmsgHdrLen || n > len(b) {
		return 0, false, &DiagError{0, fmt.Sprintf("message length %d outside 16..%d", n, len(b))}
	}
	p := b[nlmsgHdrLen:n]
	switch typ {
	case unix.NLMSG_ERROR:
		if len(p) < 4 {
			return 0, false, &DiagError{nlmsgHdrLen, "error message without its code"}
		}
		code := int32(ne.Uint32(p))
		if code == 0 || code == -int32(unix.ENOENT) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("%w: %v", errNoDiag, unix.Errno(-code))
	case unix.SOCK_DIAG_BY_FAMILY:
		if len(p) < inetDiagMsg {
			return 0, false, &DiagError{nlmsgHdrLen, fmt.Sprintf("inet_diag_msg of %d bytes, want %d", len(p), inetDiagMsg)}
		}
		state, u, inode := p[1], ne.Uint32(p[64:]), ne.Uint32(p[68:])
		if state == tcpTimeWait || inode == 0 {
			return 0, false, nil
		}
		return int(u), true, nil
	}
	return 0, false, &DiagError{4, fmt.Sprintf("message type %d", typ)}
}
