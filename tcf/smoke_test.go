package tcf_test

import (
	"testing"

	"github.com/sondedbg/sonde/tcf/client"
)

func TestSmokeEcho(t *testing.T) {
	_, addr := startServer(t, tcfConfig())
	c := dial(t, addr, client.Options{})
	t.Log(c.Services())
	res, err := c.Call(ctx5(t), "Diagnostics", "echo", "hello\x03world")
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := res.Decode(&s); err != nil || s != "hello\x03world" {
		t.Fatalf("echo: %q %v", s, err)
	}
}
