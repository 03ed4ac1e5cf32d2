package tcf

import (
	"net"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"strings"
)

// registerLocator adds the Locator service every TCF peer has: the Hello
// exchange is done by the channel; the commands are here. The agent does
// no UDP discovery, so getPeers lists only the agent itself and redirect
// knows no peer.
func registerLocator(s *Server) {
	svc := s.Service("Locator")
	svc.Command("sync", func(c *Call) {
		if err := c.Args().End(); err != nil {
			c.ReplyError(err)
			return
		}
		// Commands run in arrival order, so everything sent before this
		// has been processed: the reply is the barrier.
		c.ReplyError(nil)
	})
	svc.Command("getAgentID", func(c *Call) {
		if err := c.Args().End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		c.Reply().Error(nil).String(s.AgentID()).Send()
	})
	svc.Command("getPeers", func(c *Call) {
		if err := c.Args().End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		c.Reply().Error(nil).Data([]map[string]string{s.peerAttrs(c.Channel())}).Send()
	})
	svc.Command("redirect", func(c *Call) {
		a := c.Args()
		var peer string
		if a.Remaining() > 0 && !a.IsNull() && firstByte(a) == '{' {
			p := a.Props()
			peer, _ = p.String("ID")
		} else {
			peer = a.String()
		}
		if err := a.End(); err != nil {
			c.ReplyError(err)
			return
		}
		c.ReplyError(Errorf(CodeUnknownPeer, "Unknown peer %q: sonde does not redirect channels", peer))
	})
}

// firstByte peeks at the first non-space byte of the next argument.
func firstByte(a *Args) byte {
	if a.next >= len(a.fields) {
		return 0
	}
	d := trimSpace(a.fields[a.next].Data)
	if len(d) == 0 {
		return 0
	}
	return d[0]
}

// peerAttrs describes the agent as a TCF peer, as seen on channel ch.
func (s *Server) peerAttrs(ch *Channel) map[string]string {
	host, port := "127.0.0.1", "1534"
	if a, ok := ch.LocalAddr().(*net.TCPAddr); ok {
		host, port = a.IP.String(), strconv.Itoa(a.Port)
	}
	userName := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		userName = u.Username
	}
	osName := runtime.GOOS
	if osName == "linux" {
		osName = "Linux"
	}
	return map[string]string{
		"ID":               "TCP:" + net.JoinHostPort(host, port),
		"Name":             s.cfg.Name,
		"OSName":           osName,
		"UserName":         userName,
		"AgentID":          s.AgentID(),
		"ServiceManagerID": s.AgentID(),
		"TransportName":    "TCP",
		"Host":             strings.Trim(host, "[]"),
		"Port":             port,
	}
}
