package services_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// fuzzCommands are the commands FuzzLiveCommands sends arbitrary arguments
// to: everything that reads or changes the debugged process, nothing that
// could reach other processes or files (start, attach, signal, terminate of
// arbitrary PIDs, FileSystem, Terminals are left out on purpose).
var fuzzCommands = []struct{ service, command string }{
	{"RunControl", "getContext"}, {"RunControl", "getChildren"}, {"RunControl", "getState"},
	{"RunControl", "resume"}, {"RunControl", "suspend"}, {"RunControl", "getISA"},
	{"Memory", "getContext"}, {"Memory", "get"}, {"Memory", "set"}, {"Memory", "fill"},
	{"MemoryMap", "get"}, {"MemoryMap", "set"},
	{"Registers", "getContext"}, {"Registers", "getChildren"}, {"Registers", "get"}, {"Registers", "getm"},
	{"StackTrace", "getContext"}, {"StackTrace", "getChildren"}, {"StackTrace", "getChildrenRange"},
	{"Breakpoints", "add"}, {"Breakpoints", "change"}, {"Breakpoints", "set"}, {"Breakpoints", "remove"},
	{"Breakpoints", "enable"}, {"Breakpoints", "getStatus"},
	{"Symbols", "getContext"}, {"Symbols", "find"}, {"Symbols", "findByAddr"}, {"Symbols", "findByName"},
	{"LineNumbers", "mapToSource"}, {"LineNumbers", "mapToMemory"},
	{"Streams", "subscribe"}, {"Streams", "connect"}, {"Streams", "disconnect"},
	{"ContextQuery", "query"}, {"PathMap", "set"}, {"PathMap", "get"},
}

// FuzzLiveCommands sends arbitrary argument bytes to the debug services while
// a real process is stopped at main: every command gets exactly one reply and
// the agent keeps answering.
func FuzzLiveCommands(f *testing.F) {
	la := startLive(f)
	_, thread := la.stoppedAtMain("sleep")
	proc := thread[:bytes.IndexByte([]byte(thread), '.')]
	seeds := [][]string{
		{`"` + thread + `"`}, {`"` + proc + `"`},
		{`"` + proc + `"`, `4096`, `1`, `16`, `1`},
		{`"` + thread + `"`, `0`, `1`},
		{`{"ID":"f","Location":"main","Condition":"x"}`},
		{`{"ID":"g","File":"agent_prog.c","Line":1000000}`},
		{`[["R16.` + thread + `",0,8]]`},
		{`"FP0.` + thread + `"`},
		{`["FP0.` + thread + `","FP99.` + thread + `"]`},
		{`"` + thread + `"`, `"agent_global"`},
		{`"P1/**"`},
		{`[{"ID":"r","Source":"/a","Destination":"/b"}]`},
		{`"` + proc + `"`, `[{"Addr":1,"Size":2,"FileName":"x"}]`},
		{`1e999`}, {`-1`}, {`"\u0000"`}, {`{"ID":[]}`}, {`[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]`},
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(joinFields(s)))
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		cmd := fuzzCommands[int(which)%len(fuzzCommands)]
		if cmd.service == "RunControl" && cmd.command == "resume" {
			// A resume would let the program run off: keep it a step.
			args = []byte(joinFields([]string{`"` + thread + `"`, `2`, `1`}))
		}
		fields := bytes.Split(args, []byte{0})
		p, err := la.c.SendFields(cmd.service, cmd.command, func(b *tcf.Builder) {
			for _, fl := range fields {
				b.RawJSON(bytes.ReplaceAll(fl, []byte{3}, nil))
			}
		})
		if err != nil {
			t.Skip("unencodable argument")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := p.Wait(ctx); err != nil && !errors.Is(err, client.ErrNotRecognized) {
			t.Fatalf("%s.%s %q: %v", cmd.service, cmd.command, args, err)
		}
		var echo string
		r, err := la.c.Call(ctx, "Diagnostics", "echo", "alive")
		if err == nil {
			err = r.Decode(&echo)
		}
		if err != nil || echo != "alive" {
			t.Fatalf("agent after %s.%s %q: %q %v", cmd.service, cmd.command, args, echo, err)
		}
	})
}

func joinFields(fs []string) string {
	var b bytes.Buffer
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(f)
	}
	return b.String()
}
