package tcf_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// msg builds wire bytes from readable parts: fields joined by NUL, then
// EOM. Use it for both what the test sends and what it expects, so the
// goldens read like the protocol spec (• = 00).
func msg(fields ...string) []byte {
	var b bytes.Buffer
	for _, f := range fields {
		b.WriteString(f)
		b.WriteByte(0)
	}
	b.Write([]byte{3, 1})
	return b.Bytes()
}

const helloGolden = "E\x00Locator\x00Hello\x00[\"ZeroCopy\",\"Locator\",\"Diagnostics\"]\x00\x03\x01"

// openRaw connects with a plain socket, checks the agent's Hello is the
// first thing on the wire, and says Hello back.
// extraServices are services the test registered after Diagnostics.
func openRaw(t *testing.T, addr string, extraServices ...string) *rawConn {
	t.Helper()
	rc := dialRaw(t, addr)
	hello := helloGolden
	for _, s := range extraServices {
		hello = strings.Replace(hello, `]`, `,"`+s+`"]`, 1)
	}
	if got := rc.readN(len(hello)); string(got) != hello {
		t.Fatalf("agent Hello:\n got %q\nwant %q", got, hello)
	}
	rc.write(msg("E", "Locator", "Hello", `["ZeroCopy"]`))
	return rc
}

// exchange sends each request and checks the reply byte for byte.
func exchange(t *testing.T, rc *rawConn, cases []struct{ name, send, want string }) {
	t.Helper()
	for _, tc := range cases {
		rc.write([]byte(tc.send))
		if got := rc.readN(len(tc.want)); string(got) != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

const timeField = `"Time":1700000000123`

func TestGoldenBeforeHello(t *testing.T) {
	_, addr := startServer(t, tcf.Config{})
	rc := dialRaw(t, addr)
	if got := rc.readN(len(helloGolden)); string(got) != helloGolden {
		t.Fatalf("agent Hello:\n got %q\nwant %q", got, helloGolden)
	}
	// Commands before the peer's Hello are answered with N, even known ones.
	exchange(t, rc, []struct{ name, send, want string }{
		{"sync before Hello", string(msg("C", "1", "Locator", "sync")), string(msg("N", "1"))},
		{"echo before Hello", string(msg("C", "2", "Diagnostics", "echo", `"x"`)), string(msg("N", "2"))},
	})
	rc.write(msg("E", "Locator", "Hello", `[]`))
	exchange(t, rc, []struct{ name, send, want string }{
		{"sync after Hello", string(msg("C", "3", "Locator", "sync")), string(msg("R", "3", ""))},
	})
}

func TestGoldenReplies(t *testing.T) {
	_, addr := startServer(t, tcf.Config{})
	rc := openRaw(t, addr)
	protoErr := func(format string) string {
		return `{"Code":3,` + timeField + `,"Format":"` + format + `"}`
	}
	exchange(t, rc, []struct{ name, send, want string }{
		{"Locator.sync", string(msg("C", "1", "Locator", "sync")), string(msg("R", "1", ""))},
		{"Locator.getAgentID", string(msg("C", "2", "Locator", "getAgentID")),
			string(msg("R", "2", "", `"00000000-1111-4222-8333-444444444444"`))},
		{"Locator.redirect", string(msg("C", "3", "Locator", "redirect", `"TCP:10.1.2.3:1534"`)),
			string(msg("R", "3", `{"Code":7,`+timeField+`,"Format":"Unknown peer \"TCP:10.1.2.3:1534\": sonde does not redirect channels"}`))},
		{"Locator.redirect with attributes", string(msg("C", "4", "Locator", "redirect", `{"ID":"X"}`)),
			string(msg("R", "4", `{"Code":7,`+timeField+`,"Format":"Unknown peer \"X\": sonde does not redirect channels"}`))},
		{"Diagnostics.echo", string(msg("C", "5", "Diagnostics", "echo", `"hello"`)), string(msg("R", "5", `"hello"`))},
		{"echo of control characters", string(msg("C", "6", "Diagnostics", "echo", `"a\u0003b\u0000c\n\u001f"`)),
			string(msg("R", "6", `"a\u0003b\u0000c\n\u001f"`))},
		{"echo keeps non-ASCII and HTML characters", string(msg("C", "7", "Diagnostics", "echo", `"<é中😀&>"`)),
			string(msg("R", "7", `"<é中😀&>"`))},
		{"echo of null", string(msg("C", "8", "Diagnostics", "echo", ``)), string(msg("R", "8", `""`))},
		{"token with an escape byte", "C\x00t\x03\x00k\x00Diagnostics\x00echo\x00\"x\"\x00\x03\x01",
			"R\x00t\x03\x00k\x00\"x\"\x00\x03\x01"},
		{"echoFP", string(msg("C", "9", "Diagnostics", "echoFP", `1.50`)), string(msg("R", "9", `1.5`))},
		{"echoFP integer", string(msg("C", "10", "Diagnostics", "echoFP", `-3`)), string(msg("R", "10", `-3`))},
		{"echoFP tiny", string(msg("C", "11", "Diagnostics", "echoFP", `2.5e-300`)), string(msg("R", "11", `2.5e-300`))},
		{"echoINT uint64 max", string(msg("C", "12", "Diagnostics", "echoINT", `3`, `18446744073709551615`)),
			string(msg("R", "12", `18446744073709551615`))},
		{"echoINT 2^53+1 stays exact", string(msg("C", "13", "Diagnostics", "echoINT", `2`, `9007199254740993`)),
			string(msg("R", "13", `9007199254740993`))},
		{"echoINT int64 min", string(msg("C", "14", "Diagnostics", "echoINT", `2`, `-9223372036854775808`)),
			string(msg("R", "14", `-9223372036854775808`))},
		{"echoERR", string(msg("C", "15", "Diagnostics", "echoERR", `{"Code":16,"Time":5,"Format":"Bad {0} at {1}","Params":["P1",4096],"AltCode":3,"AltOrg":"Linux","Zeta":true}`)),
			string(msg("R", "15", `{"Code":16,"Time":5,"Format":"Bad {0} at {1}","Params":["P1",4096],"AltCode":3,"AltOrg":"Linux","Zeta":true}`, `"Bad P1 at 4096"`))},
		{"echoERR with a service code", string(msg("C", "16", "Diagnostics", "echoERR", `{"Code":65538,"Time":1,"Service":"FileSystem"}`)),
			string(msg("R", "16", `{"Code":65538,"Time":1,"Service":"FileSystem"}`, `"Error code 65538"`))},
		{"unknown service", string(msg("C", "17", "NoSuchService", "foo")), string(msg("N", "17"))},
		{"unknown command", string(msg("C", "18", "Diagnostics", "noSuchCommand", `1`)), string(msg("N", "18"))},
		{"unknown command with malformed arguments", string(msg("C", "19", "Locator", "nope", `{`)), string(msg("N", "19"))},
		{"too many arguments", string(msg("C", "20", "Locator", "sync", `1`)),
			string(msg("R", "20", protoErr("wrong number of arguments: want 0, got 1")))},
		{"too few arguments", string(msg("C", "21", "Diagnostics", "echoINT", `3`)),
			string(msg("R", "21", protoErr("wrong number of arguments: want at least 2, got 1")))},
		{"malformed JSON", string(msg("C", "22", "Diagnostics", "echo", `"abc`)),
			string(msg("R", "22", `{"Code":2,`+timeField+`,"Format":"argument 1: want string, got \"\\\"abc\": unexpected end of JSON input"}`))},
		{"wrong type", string(msg("C", "23", "Diagnostics", "echoINT", `3`, `"12"`)),
			string(msg("R", "23", `{"Code":20,`+timeField+`,"Format":"argument 2: want unsigned integer, got \"\\\"12\\\"\": not an integer"}`))},
		{"fraction where an integer belongs", string(msg("C", "24", "Diagnostics", "echoINT", `3`, `1.0`)),
			string(msg("R", "24", `{"Code":20,`+timeField+`,"Format":"argument 2: want unsigned integer, got \"1.0\": not an integer"}`))},
		{"2^64 does not fit", string(msg("C", "25", "Diagnostics", "echoINT", `3`, `18446744073709551616`)),
			string(msg("R", "25", `{"Code":20,`+timeField+`,"Format":"argument 2: want unsigned integer, got \"18446744073709551616\": out of range"}`))},
		{"binary length prefix beyond the message", string(msg("C", "26", "Diagnostics", "echo", `(99999999999)abc`)),
			string(msg("R", "26", protoErr(`malformed arguments: field 1: binary data of 99999999999 bytes not followed by a field end`)))},
		{"still alive after all that", string(msg("C", "27", "Locator", "sync")), string(msg("R", "27", ""))},
	})
}

func TestGoldenReportFromTypedError(t *testing.T) {
	// Report is what every service's Reply.Error uses.
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"coded", tcf.Errorf(tcf.CodeInvalidContext, "no context %q", "P1"), `{"Code":16,"Time":1700000000123,"Format":"no context \"P1\""}`},
		{"plain", errString("boom"), `{"Code":1,"Time":1700000000123,"Format":"boom"}`},
		{"errno", wrapErrno(), `{"Code":17,"Time":1700000000123,"Format":"read 0x10: input/output error","AltCode":5,"AltOrg":"Linux"}`},
		{"service", fsErr{}, `{"Code":65538,"Time":1700000000123,"Service":"FileSystem","Format":"no such file"}`},
		{"cancelled", fmt.Errorf("step: %w", context.Canceled), `{"Code":6,"Time":1700000000123,"Format":"step: context canceled"}`},
		{"report passes through", &tcf.ErrorReport{Code: 22, Time: 9, Format: "x"}, `{"Code":22,"Time":9,"Format":"x"}`},
	}
	for _, tc := range cases {
		var b tcf.Builder
		b.Error(tcf.Report(tc.err, fixedTime))
		got, _ := b.Bytes()
		if want := tc.want + "\x00"; string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
	}
	if tcf.Report(nil, fixedTime) != nil {
		t.Error("Report(nil) is not nil")
	}
}

func TestLocatorGetPeers(t *testing.T) {
	_, addr := startServer(t, tcf.Config{})
	c := dial(t, addr, client.Options{})
	res, err := c.Call(ctx5(t), "Locator", "getPeers")
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	var peers []map[string]string
	if err := res.Decode(&rerr, &peers); err != nil || rerr != nil || len(peers) != 1 {
		t.Fatalf("getPeers: %v %v %v", peers, rerr, err)
	}
	p := peers[0]
	host, port, _ := net.SplitHostPort(addr)
	want := map[string]string{"ID": "TCP:" + addr, "Name": "sonde", "OSName": "Linux", "TransportName": "TCP",
		"Host": host, "Port": port, "AgentID": "00000000-1111-4222-8333-444444444444"}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("peer %s = %q, want %q", k, p[k], v)
		}
	}
}

// TestPeerEOSAndRepeatedHello: a second Hello replaces the peer's service
// list; the peer's end-of-stream closes the channel without a reply.
func TestPeerEOSAndRepeatedHello(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	var ch *tcf.Channel
	opened := make(chan struct{})
	srv.OnChannelOpen(func(c *tcf.Channel) { ch = c; close(opened) })
	rc := openRaw(t, addr)
	<-opened
	rc.write(msg("E", "Locator", "Hello", `["A","B"]`))
	exchange(t, rc, []struct{ name, send, want string }{
		{"sync", string(msg("C", "1", "Locator", "sync")), string(msg("R", "1", ""))},
	})
	if got := ch.PeerServices(); len(got) != 2 || got[0] != "A" {
		t.Fatalf("peer services %v", got)
	}
	rc.write([]byte("\x03\x02{\"Code\":5,\"Time\":1,\"Format\":\"client going\"}\x00\x03\x01"))
	if rest := rc.readAll(); len(rest) != 0 {
		t.Fatalf("agent answered an end of stream with %q", rest)
	}
	<-ch.Done()
}
