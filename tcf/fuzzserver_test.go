package tcf_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
)

// FuzzServer feeds arbitrary bytes to a whole channel (after a valid
// Hello, so commands are dispatched): the agent must not panic, and the
// channel must finish promptly once the peer hangs up.
func FuzzServer(f *testing.F) {
	f.Add([]byte("C\x001\x00Locator\x00sync\x00\x03\x01"))
	f.Add([]byte("C\x002\x00Diagnostics\x00echoINT\x003\x00\x03\x03\x15" + "18446744073709551615\x00\x03\x01"))
	f.Add([]byte("C\x003\x00Diagnostics\x00echoERR\x00{\"Code\":1,\"CausedBy\":{\"Code\":2}}\x00\x03\x01"))
	f.Add([]byte("C\x004\x00Diagnostics\x00echo\x00(3)abc\x00\x03\x01C\x005\x00X\x00y\x00\x03\x01"))
	f.Add([]byte("\x03\x02{}\x00\x03\x01"))
	f.Add([]byte("E\x00Locator\x00Hello\x00null\x00\x03\x01"))
	srv := tcf.NewServer(tcf.Config{Logger: quietLogger(), MaxMessageSize: 1 << 12})
	tcf.RegisterDiagnostics(srv)
	hello := msg("E", "Locator", "Hello", `[]`)
	f.Fuzz(func(t *testing.T, data []byte) {
		agentSide, peer := net.Pipe()
		ch := srv.ServeConn(agentSide)
		drained := make(chan struct{})
		go func() { io.Copy(io.Discard, peer); close(drained) }()
		peer.SetWriteDeadline(time.Now().Add(2 * time.Second))
		peer.Write(hello)
		peer.Write(data)
		peer.Close()
		select {
		case <-ch.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("channel did not finish after the peer hung up")
		}
		<-drained
	})
}
