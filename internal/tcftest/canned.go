package tcftest

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/tcf"
)

// CannedThread is the thread whose stack CannedStackServer describes.
const CannedThread = "P12345.12345"

// CannedStackServer serves the commands of a stack round (StackTrace,
// Symbols, LineNumbers) with fixed answers shaped like sonde's for a
// 57-frame stack, so that a benchmark of the round measures the client,
// the framework and the hops between them, not symbol lookups: the floor
// under any agent's round with the same client.
func CannedStackServer() *tcf.Server {
	const frames = 57
	var ids, props []string
	for i := range frames {
		ids = append(ids, fmt.Sprintf("%q", fmt.Sprintf("FP%d.%s", i, CannedThread)))
		props = append(props, fmt.Sprintf(`{"ID":"FP%d.%s","ParentID":"%s","ProcessID":"P12345","Index":%d,"Level":%d,"TopFrame":%v,"Walk":true,"IP":%d,"FP":140736104913832}`,
			i, CannedThread, CannedThread, i, frames-1-i, i == frames-1, 94085057888609+uint64(i)*37))
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
		c.Reply().Null().String("F@P12345@" + strconv.FormatUint(addr, 16) + "@0").Send()
	})
	sym.Command("getContext", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().Null().RawJSON(symbol).Send()
	})
	srv.Service("LineNumbers").Command("mapToSource", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().Null().RawJSON(area).Send()
	})
	return srv
}
