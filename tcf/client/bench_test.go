package client_test

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/tcftest"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// cannedStackAgent serves the commands of a stack round (StackTrace,
// Symbols, LineNumbers) with fixed answers shaped like sonde's for a
// 57-frame stack, so that a benchmark of the round measures the client and
// the framework, not symbol lookups.
func cannedStackAgent(b *testing.B) string {
	const frames = 57
	const thread = "P12345.12345"
	var ids, props []string
	for i := range frames {
		ids = append(ids, fmt.Sprintf("%q", fmt.Sprintf("FP%d.%s", i, thread)))
		props = append(props, fmt.Sprintf(`{"ID":"FP%d.%s","ParentID":"%s","ProcessID":"P12345","Index":%d,"Level":%d,"TopFrame":%v,"Walk":true,"IP":%d,"FP":140736104913832}`,
			i, thread, thread, i, frames-1-i, i == frames-1, 94085057888609+uint64(i)*37))
	}
	slices.Reverse(ids) // bottom first
	children := []byte("[" + strings.Join(ids, ",") + "]")
	contexts := []byte("[" + strings.Join(props, ",") + "]")
	area := []byte(`[{"SAddr":94085057888948,"EAddr":94085057888952,"File":"agent_prog.c","Dir":"/work/main/testdata","SLine":58,"SCol":42,"ELine":58,"ECol":57,"IsStmt":true,"NAddr":94085057888952,"NStmtAddr":94085057888952}]`)
	symbol := []byte(`{"Address":94085057888948,"Class":3,"ID":"F@P12345@5591e27442b4@0","Name":"deep","OwnerID":"P12345","Size":22,"TypeClass":8,"UpdatePolicy":0}`)

	srv := tcf.NewServer(tcf.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	st := srv.Service("StackTrace")
	st.Command("getChildren", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().Null().RawJSON(children).Send()
	})
	st.Command("getContext", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().RawJSON(contexts).Null().Send()
	})
	sym := srv.Service("Symbols")
	sym.Command("findByAddr", func(c *tcf.Call) {
		a := c.Args()
		a.Skip()
		addr := a.Uint64()
		c.Reply().Null().String(fmt.Sprintf("F@P12345@%x@0", addr)).Send()
	})
	sym.Command("getContext", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().Null().RawJSON(symbol).Send()
	})
	srv.Service("LineNumbers").Command("mapToSource", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().Null().RawJSON(area).Send()
	})
	return serve(b, srv)
}

// BenchmarkStackRound is a client's 57-frame stack round (as tcfbench and
// BenchmarkStack57 in tcf/services issue it: getChildren; getContext of all
// frames; findByAddr and mapToSource per frame; Symbols.getContext per
// symbol; each wave pipelined) against cannedStackAgent. Client and server
// share the process: the allocations and a CPU profile's client share are
// the figures to read.
func BenchmarkStackRound(b *testing.B) {
	c, err := client.DialTimeout(cannedStackAgent(b), client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const thread = "P12345.12345"
	b.ReportAllocs()
	for b.Loop() {
		names := tcftest.StackRound(b, c, thread)
		if len(names) != 57 || names[0] != "deep" {
			b.Fatalf("%d frames, top %q", len(names), names[0])
		}
	}
}
