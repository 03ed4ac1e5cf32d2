package tcf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// logBuffer is a slog destination tests can read while the server writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func (l *logBuffer) wait(t *testing.T, sub string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(l.String(), sub) {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q:\n%s", sub, l.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// zeroCopyVarint encodes a ZeroCopy block length.
func zeroCopyVarint(n uint64) []byte {
	var b []byte
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// TestZeroCopyAnnouncementAllocatesNothing: a block header announcing 30
// MiB that never arrive must not make the reader allocate 30 MiB (it used
// to reserve the announced length up front: 300 such connections took an
// agent to 2.1 GB).
func TestZeroCopyAnnouncementAllocatesNothing(t *testing.T) {
	msg := []byte("C\x001\x00Svc\x00cmd\x00\x03\x03")
	msg = append(msg, zeroCopyVarint(30<<20)...)
	msg = append(msg, bytes.Repeat([]byte("z"), 100)...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rd := tcf.NewReader(bytes.NewReader(msg), 0)
	_, err := rd.ReadMessage()
	runtime.ReadMemStats(&after)
	var fe *tcf.FramingError
	if !errors.As(err, &fe) {
		t.Fatalf("truncated block: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading a 30 MiB announcement with 100 bytes allocated %d bytes", got)
	}
}

// TestInputBudgetIsShared: readers charging one budget cannot together
// buffer more than it; a reader that is released gives its share back.
func TestInputBudgetIsShared(t *testing.T) {
	b := tcf.NewBudget(1 << 20)
	msg := append(append([]byte("C\x001\x00Svc\x00cmd\x00\""), bytes.Repeat([]byte("a"), 700<<10)...), "\"\x00\x03\x01"...)
	r1 := tcf.NewReader(bytes.NewReader(msg), 0)
	r1.SetBudget(b)
	if _, err := r1.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	if b.Used() < 700<<10 {
		t.Fatalf("budget charged %d for a 700 KiB message", b.Used())
	}
	r2 := tcf.NewReader(bytes.NewReader(msg), 0)
	r2.SetBudget(b)
	_, err := r2.ReadMessage()
	var fe *tcf.FramingError
	if !errors.As(err, &fe) || fe.Code != tcf.CodeBufferOverflow || !strings.Contains(fe.Reason, "agent-wide input") {
		t.Fatalf("second reader over the budget: %v", err)
	}
	r1.Release()
	r2.Release()
	if b.Used() != 0 {
		t.Errorf("released readers still hold %d bytes", b.Used())
	}
	r3 := tcf.NewReader(bytes.NewReader(msg), 0)
	r3.SetBudget(b)
	if _, err := r3.ReadMessage(); err != nil {
		t.Errorf("after the release: %v", err)
	}
}

// TestOutputBudgetClosesChannel: a peer that does not read while events
// pile up is closed once the agent-wide output budget is spent, with the
// reason in the log, and its queue is given back.
func TestOutputBudgetClosesChannel(t *testing.T) {
	var log logBuffer
	srv, addr := startServer(t, tcf.Config{Logger: log.logger(), MaxQueuedOutput: 1 << 20})
	r := dialRaw(t, addr)
	r.write([]byte("E\x00Locator\x00Hello\x00[]\x00\x03\x01"))
	waitChannels(t, srv, 1)
	big := strings.Repeat("e", 64<<10)
	for i := 0; i < 2000 && len(srv.Channels()) > 0; i++ {
		srv.EmitBehind("Test", "big", big) // queued, not written at once
		srv.Emit("Test", "big", big)
	}
	log.wait(t, "agent-wide output queues full")
	waitChannels(t, srv, 0)
	deadline := time.Now().Add(5 * time.Second)
	for srv.OutputBudget().Used() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if u := srv.OutputBudget().Used(); u != 0 {
		t.Errorf("closed channel still charges %d bytes", u)
	}
	if p := srv.OutputBudget().Peak(); p > 1<<20 {
		t.Errorf("output peaked at %d bytes, over the 1 MiB budget", p)
	}
}

// TestPreHelloMessagesAreSmall: before its Hello a peer cannot make the
// agent buffer more than a small message.
func TestPreHelloMessagesAreSmall(t *testing.T) {
	var log logBuffer
	srv, addr := startServer(t, tcf.Config{Logger: log.logger()})
	r := dialRaw(t, addr)
	r.write(bytes.Repeat([]byte("A"), 200<<10))
	log.wait(t, "message longer than 65536 bytes")
	waitChannels(t, srv, 0)
}

// TestHelloTimeout: a connection that says nothing is closed with a
// report, and the reason is logged; one that says Hello is not.
func TestHelloTimeout(t *testing.T) {
	var log logBuffer
	srv, addr := startServer(t, tcf.Config{Logger: log.logger(), HelloTimeout: 200 * time.Millisecond})
	silent := dialRaw(t, addr)
	c := dial(t, addr, client.Options{})
	got := silent.readAll()
	if !bytes.Contains(got, []byte("no Locator Hello from the peer within 200ms")) {
		t.Errorf("silent peer got %q", got)
	}
	log.wait(t, "no Locator Hello")
	waitChannels(t, srv, 1)
	if _, err := c.Call(ctx5(t), "Diagnostics", "echo", "x"); err != nil {
		t.Errorf("client that said Hello: %v", err)
	}
}

// TestPerPeerChannelLimit: one peer cannot take every channel.
func TestPerPeerChannelLimit(t *testing.T) {
	var log logBuffer
	srv := tcf.NewServer(tcf.Config{Logger: log.logger(), MaxChannels: 4})
	defer srv.Shutdown(ctx5(t))
	greedy := tcf.Peer{Key: "uid:1000", UID: 1000}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	serve := func(p tcf.Peer) *tcf.Channel {
		a, b := net.Pipe()
		conns = append(conns, b)
		go func() {
			buf := make([]byte, 4096)
			for {
				if _, err := b.Read(buf); err != nil {
					return
				}
			}
		}()
		return srv.ServeConnAs(a, p)
	}
	for i := range 2 {
		if serve(greedy) == nil {
			t.Fatalf("channel %d of the greedy peer refused", i)
		}
	}
	if serve(greedy) != nil {
		t.Fatal("third channel of one peer served with MaxChannels 4")
	}
	log.wait(t, "too many open channels from uid:1000 (2)")
	if ch := serve(tcf.Peer{Key: "uid:0", UID: 0}); ch == nil || ch.Peer().UID != 0 {
		t.Fatal("another peer refused")
	}
}

const procNetSample = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:05FE 06 00000000:00000000 03:00000F5C 00000000     0        0 0 3 0000000000000000
   2: 0100007F:9C40 0100007F:05FE 01 00000000:00000000 00:00000000 00000000  1000        0 2222 1 0000000000000000 20 4 30 10 -1
`

func TestFindSocketUID(t *testing.T) {
	local := netip.MustParseAddrPort("127.0.0.1:40000")
	remote := netip.MustParseAddrPort("127.0.0.1:1534")
	uid, found, err := tcf.FindSocketUID(strings.NewReader(procNetSample), local, remote)
	if err != nil || !found || uid != 1000 {
		t.Errorf("got uid %d found %v err %v; want 1000 (the TIME_WAIT line, uid 0, skipped)", uid, found, err)
	}
	_, found, err = tcf.FindSocketUID(strings.NewReader(procNetSample), remote, local)
	if err != nil || found {
		t.Errorf("reverse direction: found %v err %v", found, err)
	}
	v6 := "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 00000000000000000000000001000000:9C40 00000000000000000000000001000000:05FE 01 00000000:00000000 00:00000000 00000000   42        0 3333 1\n"
	uid, found, err = tcf.FindSocketUID(strings.NewReader(v6),
		netip.MustParseAddrPort("[::1]:40000"), netip.MustParseAddrPort("[::1]:1534"))
	if err != nil || !found || uid != 42 {
		t.Errorf("IPv6: uid %d found %v err %v", uid, found, err)
	}
	for _, bad := range []string{
		"sl\n 0: 0100007F:9C40 0100007F:05FE 01\n",
		"sl\n 0: 0100007G:9C40 0100007F:05FE 01 0:0 0:0 0 1000 0 1\n",
		"sl\n 0: 0100007F:9C40 0100007F:05FE 01 0:0 0:0 0 -1 0 1\n",
		"sl\n 0: 0100007F 0100007F:05FE 01 0:0 0:0 0 1 0 1\n",
		"sl\n" + strings.Repeat("x", 5000) + "\n",
	} {
		_, _, err := tcf.FindSocketUID(strings.NewReader(bad), local, remote)
		var pe *tcf.ProcNetError
		if bad != "sl\n 0: 0100007F:9C40 0100007F:05FE 01 0:0 0:0 0 -1 0 1\n" && !errors.As(err, &pe) {
			t.Errorf("%.40q: err %v, want a ProcNetError", bad, err)
		}
		if err != nil && !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%.40q: error %q does not name line 2", bad, err)
		}
	}
}

func FuzzFindSocketUID(f *testing.F) {
	f.Add([]byte(procNetSample))
	f.Add([]byte("sl\n 0: 00000000000000000000000001000000:9C40 00000000000000000000000001000000:05FE 01 0:0 0:0 0 42 0 3333 1\n"))
	local := netip.MustParseAddrPort("127.0.0.1:40000")
	remote := netip.MustParseAddrPort("127.0.0.1:1534")
	f.Fuzz(func(t *testing.T, data []byte) {
		uid, found, err := tcf.FindSocketUID(bytes.NewReader(data), local, remote)
		if err != nil && found {
			t.Fatalf("found uid %d with an error %v", uid, err)
		}
		if uid < 0 {
			t.Fatalf("negative uid %d", uid)
		}
	})
}

// TestAccessPolicyLoopback: the real /proc/net lookup finds this process's
// own uid for a loopback connection it made; another uid is refused, and a
// peer whose socket cannot be found is refused.
func TestAccessPolicyLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	me := os.Geteuid()
	p, err := (&tcf.AccessPolicy{UID: me}).Admit(s)
	if err != nil || p.UID != me || p.Key != fmt.Sprintf("uid:%d", me) {
		t.Fatalf("own user: %+v %v", p, err)
	}
	if _, err := (&tcf.AccessPolicy{UID: me + 1}).Admit(s); !errors.Is(err, tcf.ErrPeerRefused) {
		t.Errorf("other user admitted: %v", err)
	}
	if _, err := (&tcf.AccessPolicy{UID: me + 1, AllowUIDs: []int{me}}).Admit(s); err != nil {
		t.Errorf("allowed user refused: %v", err)
	}
	// The /proc/net reading (where sock_diag is missing) finds it too.
	if p, err := (&tcf.AccessPolicy{UID: me, ProcNet: "/proc/net"}).Admit(s); err != nil || p.UID != me {
		t.Errorf("through /proc/net: %+v %v", p, err)
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "tcp"), []byte("sl\n"), 0o644)
	if _, err := (&tcf.AccessPolicy{UID: me, ProcNet: empty}).Admit(s); err == nil || !strings.Contains(err.Error(), "cannot tell") {
		t.Errorf("undeterminable peer: %v", err)
	}
	// IPv6 loopback too.
	l6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback")
	}
	defer l6.Close()
	c6, err := net.Dial("tcp", l6.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c6.Close()
	s6, err := l6.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s6.Close()
	if p, err := (&tcf.AccessPolicy{UID: me}).Admit(s6); err != nil || p.UID != me {
		t.Errorf("IPv6 loopback: %+v %v", p, err)
	}
}

// TestOutputBudgetEvictsTheHog: when a peer that does not read holds most
// of the agent-wide output budget, a reading client whose reply does not
// fit is still answered, and the one that does not read is closed.
func TestOutputBudgetEvictsTheHog(t *testing.T) {
	var log logBuffer
	srv, addr := startServer(t, tcf.Config{Logger: log.logger(), MaxQueuedOutput: 1 << 20})
	hog := dialRaw(t, addr)
	hog.write([]byte("E\x00Locator\x00Hello\x00[]\x00\x03\x01"))
	waitChannels(t, srv, 1)
	hogCh := srv.Channels()[0]
	c := dial(t, addr, client.Options{})
	ev := strings.Repeat("e", 32<<10)
	onlyHog := func(ch *tcf.Channel) bool { return ch == hogCh }
	// Fill the hog's queue (after its socket's buffers) to just under the
	// budget, and keep it there (the kernel may grow the socket's buffers
	// and drain some) until the hog is closed.
	full := func() bool { return srv.OutputBudget().Used()+2*(32<<10) >= 1<<20 }
	for i := 0; i < 100000 && !full(); i++ {
		srv.EmitTo(onlyHog, "Test", "big", ev)
	}
	if !full() {
		t.Fatalf("hog's queue only %d bytes", srv.OutputBudget().Used())
	}
	topUp := make(chan struct{})
	go func() {
		defer close(topUp)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			select {
			case <-hogCh.Done():
				return
			default:
			}
			if !full() {
				srv.EmitTo(onlyHog, "Test", "big", ev)
			} else {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	defer func() { <-topUp }()
	arg := strings.Repeat("r", 200<<10)
	res, err := c.Call(ctx5(t), "Diagnostics", "echo", arg)
	var got string
	if err != nil || res.Decode(&got) != nil || got != arg {
		t.Fatalf("reading client not answered: %v", err)
	}
	log.wait(t, "does not read")
	select {
	case <-hogCh.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("hog not closed")
	}
	if _, err := c.Call(ctx5(t), "Diagnostics", "echo", "x"); err != nil {
		t.Errorf("reading client after the eviction: %v", err)
	}
	if p := srv.OutputBudget().Peak(); p > 2<<20 {
		t.Errorf("output peaked at %d bytes, over twice the budget", p)
	}
}

// BenchmarkAdmitLoopback is the cost of identifying a loopback peer (a
// read of /proc/net/tcp) with 300 other connections open: the table holds
// both ends of each, and every admission reads it whole.
func BenchmarkAdmitLoopback(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 301 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		s, err := l.Accept()
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c, s)
	}
	p := &tcf.AccessPolicy{UID: os.Geteuid()}
	last := conns[len(conns)-1]
	b.ResetTimer()
	for range b.N {
		if _, err := p.Admit(last); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseDiagReply(t *testing.T) {
	msg := func(typ uint16, payload []byte) []byte {
		b := make([]byte, 16, 16+len(payload))
		binary.NativeEndian.PutUint32(b[0:], uint32(16+len(payload)))
		binary.NativeEndian.PutUint16(b[4:], typ)
		return append(b, payload...)
	}
	diag := make([]byte, 72)
	diag[1] = 1 // ESTABLISHED
	binary.NativeEndian.PutUint32(diag[64:], 1000)
	binary.NativeEndian.PutUint32(diag[68:], 4242)
	if uid, found, err := tcf.ParseDiagReply(msg(20, diag)); err != nil || !found || uid != 1000 {
		t.Errorf("live socket: %d %v %v", uid, found, err)
	}
	tw := bytes.Clone(diag)
	tw[1] = 6
	if _, found, err := tcf.ParseDiagReply(msg(20, tw)); err != nil || found {
		t.Errorf("TIME_WAIT socket: %v %v", found, err)
	}
	enoent := make([]byte, 20)
	binary.NativeEndian.PutUint32(enoent, uint32(0xfffffffe)) // -ENOENT
	if _, found, err := tcf.ParseDiagReply(msg(2, enoent)); err != nil || found {
		t.Errorf("ENOENT: %v %v", found, err)
	}
	for _, bad := range [][]byte{nil, msg(20, diag[:40]), msg(99, diag), msg(2, nil), append(msg(20, diag)[:4:4], 0xff)} {
		var de *tcf.DiagError
		if _, _, err := tcf.ParseDiagReply(bad); !errors.As(err, &de) {
			t.Errorf("%x: err %v, want a DiagError", bad, err)
		}
	}
}

func FuzzParseDiagReply(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 88))
	f.Fuzz(func(t *testing.T, data []byte) {
		uid, found, err := tcf.ParseDiagReply(data)
		if err != nil && found || uid < 0 {
			t.Fatalf("uid %d found %v err %v", uid, found, err)
		}
	})
}

// TestReadOnlyCommandsAtDispatch: the filter answers refused commands with
// an Unsupported error report before their handler runs; FileSystem.open
// is refused by its flags; reads reach their handlers.
func TestReadOnlyCommandsAtDispatch(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]int{}
	cfg := tcf.Config{Refused: tcf.ReadOnlyCommands()}
	srv, addr := startServer(t, cfg)
	for _, sc := range [][2]string{{"FileSystem", "open"}, {"FileSystem", "read"}, {"Memory", "get"}, {"Memory", "set"},
		{"Processes", "start"}, {"Processes", "getChildren"}, {"Terminals", "launch"}} {
		name := sc[0] + "." + sc[1]
		srv.Service(sc[0]).Command(sc[1], func(c *tcf.Call) {
			mu.Lock()
			ran[name]++
			mu.Unlock()
			c.Reply().Null().Send()
		})
	}
	c := dial(t, addr, client.Options{})
	for _, tc := range []struct {
		svc, cmd string
		args     []any
		refused  bool
	}{
		{"FileSystem", "open", []any{"/etc/passwd", 1, map[string]any{}}, false},
		{"FileSystem", "open", []any{"/tmp/x", 2, map[string]any{}}, true},
		{"FileSystem", "open", []any{"/tmp/x", 1 | 8, map[string]any{}}, true},
		{"FileSystem", "open", []any{"/tmp/x", "bad", map[string]any{}}, true},
		{"FileSystem", "read", []any{"FS1", 0, 10}, false},
		{"Memory", "get", []any{"P1", 0, 1, 1, 0}, false},
		{"Memory", "set", []any{"P1", 0, 1, 1, 0, "AA=="}, true},
		{"Processes", "start", []any{"", "/bin/sh", []string{}, []string{}, false}, true},
		{"Processes", "getChildren", []any{"", false}, false},
		{"Terminals", "launch", []any{"ansi", "UTF-8", []string{}}, true},
	} {
		name := tc.svc + "." + tc.cmd
		mu.Lock()
		before := ran[name]
		mu.Unlock()
		res, err := c.Call(ctx5(t), tc.svc, tc.cmd, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mu.Lock()
		called := ran[name] > before
		mu.Unlock()
		rep := res.Args().Report()
		if tc.refused {
			if called || rep == nil || rep.Code != tcf.CodeUnsupported || !strings.Contains(rep.Message(), "read-only") {
				t.Errorf("%s%v: handler ran %v, reply %q; want refused", name, tc.args, called, res.Raw())
			}
		} else if !called || rep != nil {
			t.Errorf("%s%v: handler ran %v, report %v; want it served", name, tc.args, called, rep)
		}
	}
}
