package services_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/services"
)

// TestLiveStartReplyBeforeStopAtMain: the reply to ProcessesV1.start comes
// before the new process's contextSuspended at main on the wire, every time
// (a client learns the process from the reply; the Eclipse TCF Python
// client's own benchmark only listens for the stop once it has the reply).
// The reply is made slow on purpose (20 ms after the resume, when the
// program has long reached main).
func TestLiveStartReplyBeforeStopAtMain(t *testing.T) {
	services.SetAfterLaunchResume(func() { time.Sleep(20 * time.Millisecond) })
	defer services.SetAfterLaunchResume(nil)
	la := startLive(t)
	prog := agentProg(t)
	conn, err := net.Dial("tcp", la.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := tcf.NewReader(conn, 0)
	var hello tcf.Builder
	hello.Event("Locator", "Hello").Data([]string{}).End()
	hw, _ := hello.Bytes()
	if _, err := conn.Write(hw); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		token := fmt.Sprintf("start%d", i)
		var b tcf.Builder
		b.Command(token, "ProcessesV1", "start").Data("").Data(prog).Data([]string{prog, "loop", "1"}).
			Data(nil).Data(map[string]any{"StopAtEntry": false, "StopAtMain": true}).End()
		wire, err := b.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(wire); err != nil {
			t.Fatal(err)
		}
		replied, stopped := false, false
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		for !replied || !stopped {
			m, err := rd.ReadMessage()
			if err != nil {
				t.Fatalf("launch %d: reading: %v", i, err)
			}
			switch {
			case m.Kind == 'R' && string(m.Token) == token:
				replied = true
			case m.Kind == 'E' && string(m.Service) == "RunControl" && string(m.Name) == "contextSuspended":
				if !replied {
					t.Fatalf("launch %d: contextSuspended came before the start reply", i)
				}
				stopped = true
			}
		}
	}
}
