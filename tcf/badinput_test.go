package tcf_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// expectEOS reads until the agent closes and checks that it ended the
// stream with an error report of the given code whose text contains want.
func expectEOS(t *testing.T, rc *rawConn, code int, want string) {
	t.Helper()
	rest := rc.readAll()
	i := bytes.Index(rest, []byte{3, 2})
	if i < 0 {
		t.Fatalf("no end-of-stream marker in %q", trunc(rest))
	}
	r := tcf.NewReader(bytes.NewReader(rest[i:]), 0)
	_, err := r.ReadMessage()
	eos, ok := err.(*tcf.EOSError)
	if !ok || eos.Report == nil {
		t.Fatalf("after EOS: %v (%q)", err, rest[i:])
	}
	if eos.Report.Code != code || !strings.Contains(eos.Report.Format, want) {
		t.Fatalf("EOS report %+v, want code %d and %q", eos.Report, code, want)
	}
}

func TestBadInputClosesWithReason(t *testing.T) {
	cases := []struct {
		name string
		send []byte
		code int
		want string
	}{
		{"invalid escape", []byte("C\x001\x00Locator\x00sync\x00\x03\x07"), tcf.CodeProtocol, "invalid escape sequence 03 07"},
		{"garbage without end of message", bytes.Repeat([]byte("garbage!"), 1024), tcf.CodeBufferOverflow, "message longer than 4096 bytes"},
		{"huge ZeroCopy length", []byte("C\x001\x00\x03\x03\xff\xff\xff\xff\xff\xff\xff\xff\x7f"), tcf.CodeBufferOverflow, "ZeroCopy block length beyond"},
		{"ZeroCopy length over the limit", []byte("C\x001\x00\x03\x03\x80\x20"), tcf.CodeBufferOverflow, "ZeroCopy block of 4096 bytes exceeds"},
		{"endless varint", []byte("\x03\x03\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80"), tcf.CodeProtocol, "ZeroCopy length longer than"},
		{"unknown message kind", msg("Q", "1"), tcf.CodeProtocol, `unknown message kind 'Q'`},
		{"long kind field", msg("CC", "1"), tcf.CodeProtocol, "one-letter kind"},
		{"command without a name", []byte("C\x001\x00Locator\x03\x01"), tcf.CodeProtocol, "command without service name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startServer(t, tcf.Config{MaxMessageSize: 4096})
			rc := dialRaw(t, addr)
			rc.readN(len(helloGolden))
			rc.write(msg("E", "Locator", "Hello", `[]`))
			rc.write(tc.send)
			expectEOS(t, rc, tc.code, tc.want)
		})
	}
}

func TestTruncatedMessageThenDisconnect(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	rc := dialRaw(t, addr)
	rc.readN(len(helloGolden))
	rc.write([]byte("C\x001\x00Locator\x00sy"))
	rc.conn.Close()
	waitChannels(t, srv, 0)
}

func TestDeepJSONIsAnErrorReply(t *testing.T) {
	_, addr := startServer(t, tcf.Config{})
	c := dial(t, addr, client.Options{})
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	p, err := c.SendFields("Diagnostics", "echo", func(b *tcf.Builder) { b.RawJSON([]byte(deep)) })
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	if err := res.Decode(&rerr); err != nil {
		t.Fatal(err)
	}
	if code(rerr) != tcf.CodeProtocol && code(rerr) != tcf.CodeJSONSyntax {
		t.Fatalf("deep JSON: %v", rerr)
	}
	// The channel survives.
	if _, err := c.Call(ctx5(t), "Locator", "sync"); err != nil {
		t.Fatal(err)
	}
}

func code(err error) int {
	if r, ok := err.(*tcf.ErrorReport); ok {
		return r.Code
	}
	return -1
}

func TestWrongArgumentsKeepChannel(t *testing.T) {
	_, addr := startServer(t, tcf.Config{})
	c := dial(t, addr, client.Options{})
	for _, tc := range []struct {
		cmd  string
		args []any
		code int
	}{
		{"echo", []any{1}, tcf.CodeProtocol},
		{"echo", []any{}, tcf.CodeProtocol},
		{"echo", []any{"a", "b"}, tcf.CodeProtocol},
		{"echo", []any{[]int{1}}, tcf.CodeProtocol},
		{"echoINT", []any{0, int64(1) << 40}, tcf.CodeInvalidNumber},
		{"echoINT", []any{1, -1}, tcf.CodeInvalidNumber},
		{"echoINT", []any{7, 1}, tcf.CodeInvalidNumber},
		{"echoINT", []any{"3", 1}, tcf.CodeProtocol},
		{"echoFP", []any{"x"}, tcf.CodeInvalidNumber},
		{"echoERR", []any{map[string]any{"Format": "no code"}}, tcf.CodeProtocol},
		{"echoERR", []any{"str"}, tcf.CodeProtocol},
	} {
		res, err := c.Call(ctx5(t), "Diagnostics", tc.cmd, tc.args...)
		if err != nil {
			t.Fatalf("%s%v: %v", tc.cmd, tc.args, err)
		}
		var rerr error
		if err := res.Decode(&rerr); err != nil {
			t.Fatalf("%s%v: reply %q: %v", tc.cmd, tc.args, res.Raw(), err)
		}
		if code(rerr) != tc.code {
			t.Errorf("%s%v: got %v, want code %d", tc.cmd, tc.args, rerr, tc.code)
		}
	}
	if _, err := c.Call(ctx5(t), "Locator", "sync"); err != nil {
		t.Fatal(err)
	}
}

// TestZeroCopySplitAnywhere sends one command with ZeroCopy blocks cut at
// every position (padded varints included), writing it to the socket in two
// pieces split at every byte, and checks each reply.
func TestZeroCopySplitAnywhere(t *testing.T) {
	_, addr := startServer(t, tcf.Config{})
	rc := openRaw(t, addr)
	plain := []byte("C\x00TOK\x00Diagnostics\x00echo\x00\"zero copy \u00e9\"\x00")
	want := string(msg("R", "TOK", "\"zero copy \u00e9\""))
	for cut := 0; cut < len(plain); cut++ {
		wire := zeroCopyAt(plain, cut)
		for split := 1; split < len(wire); split += 7 {
			rc.write(wire[:split])
			rc.write(wire[split:])
			if got := rc.readN(len(want)); string(got) != want {
				t.Fatalf("cut %d split %d: got %q want %q (sent %q)", cut, split, got, want, wire)
			}
		}
	}
}

// zeroCopyAt encodes plain (no escapes in it) with bytes [cut:] in a
// ZeroCopy block with a padded two-byte length, then EOM.
func zeroCopyAt(plain []byte, cut int) []byte {
	n := len(plain) - cut
	out := append([]byte{}, plain[:cut]...)
	out = append(out, 3, 3, byte(n&0x7f)|0x80, byte(n>>7))
	out = append(out, plain[cut:]...)
	return append(out, 3, 1)
}

func trunc(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:100:100], "..."...)
	}
	return b
}

func TestChannelLimit(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{MaxChannels: 2})
	dial(t, addr, client.Options{})
	dial(t, addr, client.Options{})
	waitChannels(t, srv, 2)
	rc := dialRaw(t, addr)
	expectEOS(t, rc, tcf.CodeOther, "too many open channels (2)")
	if n := len(srv.Channels()); n != 2 {
		t.Fatalf("%d channels open", n)
	}
}
