// Package tcf is sonde's Target Communication Framework (TCF) agent: the wire
// framing, the channel (Locator handshake, command dispatch, event broadcast,
// bounded outgoing queues), error reports, and a registry on which each TCF
// service is one small file that registers command handlers and emits events.
//
// The protocol is the one the Eclipse TCF clients speak (specification: the
// docs/*.html pages of the Eclipse TCF repository): messages of
// NUL-separated fields ended by the escape sequence 03 01, JSON arguments,
// Locator Hello first on every channel. BENCHMARKS.md has the figures. This package holds only
// wire types; the debug-context model below it never imports tcf. Errors from
// lower layers become TCF error reports through small interfaces (see
// [Coder], [ServiceCoder]) that those layers implement without importing tcf.
//
// Writing a service:
//
//	svc := server.Service("Memory")
//	svc.Command("get", func(c *tcf.Call) {
//		a := c.Args()
//		id, addr := a.String(), a.Uint64()
//		if err := a.End(); err != nil {
//			c.Reply().Empty().Error(err).Null().Send()
//			return
//		}
//		...
//		c.Reply().Binary(data).Error(err).Data(ranges).Send()
//	})
//	server.Emit("Memory", "memoryChanged", id, ranges)
//
// Who may connect and how much a peer may cost is decided here too, since
// TCF itself has no authentication and the agent often runs as root:
// [AccessPolicy] admits a connection before anything is read from it (the
// peer's uid for loopback TCP and Unix-domain sockets, a verified client
// certificate for TLS, see [ServerTLS]); a channel must say Hello within
// Config.HelloTimeout; one peer holds at most Config.MaxChannelsPerPeer
// channels; message bodies grow as their bytes arrive, and the input all
// channels buffer and the output queued for them are bounded together
// ([Budget]); a [CommandFilter] refuses commands at dispatch (--read-only).
//
// The package tcf/client is a Go client for the same protocol.
package tcf
