package services_test

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLiveDPrintf sets two dynamic-printf breakpoints the way Eclipse sends
// them (Condition `$printf(...)` and `(cond) && $printf(...)`) on a live
// program, runs it to exit and checks that the text, formatted in the agent
// from locals, parameters, globals and expressions, arrives on the DPrintf
// stream in order, while no stop was ever shown; then close ends the stream.
func TestLiveDPrintf(t *testing.T) {
	prog := disProg(t)
	la := startLive(t)
	var e error
	var sid string
	la.decode("DPrintf", "open", []any{nil}, &e, &sid)
	var again string
	la.decode("DPrintf", "open", []any{map[string]any{}}, &e, &again)
	if sid == "" || again != sid {
		t.Fatalf("open: %q then %q (one stream per client)", sid, again)
	}
	la.ok("Streams", "connect", sid)

	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	step := sourceLine(t, "dis_svc_prog.c", "DIS_STEP_LINE")
	ret := sourceLine(t, "dis_svc_prog.c", "DIS_STEP_RETURN")
	la.ok("Breakpoints", "set", []map[string]any{
		{"ID": "dp-step", "Enabled": true, "File": "dis_svc_prog.c", "Line": step,
			"Condition": `$printf("step %d tag=%s sq=%d name=%s ratio=%g hex=%#x\n", i, tag, i*i, dis_name, dis_ratio, i+254)`},
		{"ID": "dp-ret", "Enabled": true, "File": "dis_svc_prog.c", "Line": ret,
			"Condition": `(sq == 1) && $printf("one sq=%d %s\n", sq, "lit")`},
	})
	m1 := la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	la.events.wait(t, m1, "Processes.exited", is("Processes", "exited", proc))
	for _, ev := range la.events.since(m1) {
		if ev.Service == "RunControl" && ev.Name == "contextSuspended" {
			t.Errorf("a dynamic printf stopped the program: %v", ev)
		}
	}
	want := "step 0 tag=loop sq=0 name=sonde ratio=2.5 hex=0xfe\n" +
		"step 1 tag=loop sq=1 name=sonde ratio=2.5 hex=0xff\n" +
		"one sq=1 lit\n" +
		"step 2 tag=loop sq=4 name=sonde ratio=2.5 hex=0x100\n"
	var got strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for got.Len() < len(want) && time.Now().Before(deadline) {
		var data []byte
		var lost uint64
		var eos bool
		la.decode("Streams", "read", []any{sid, 4096}, &data, &e, &lost, &eos)
		got.Write(data)
		if eos || lost != 0 {
			t.Fatalf("read: eos %v lost %d after %q", eos, lost, got.String())
		}
	}
	if got.String() != want {
		t.Errorf("DPrintf stream:\n%s\nwant:\n%s", got.String(), want)
	}
	// close: a pending read ends with EOS; open makes a new stream.
	pending, err := la.c.Send("Streams", "read", sid, 4096)
	if err != nil {
		t.Fatal(err)
	}
	la.ok("DPrintf", "close")
	r, err := pending.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	var lost uint64
	var eos bool
	if err := r.Decode(&data, &e, &lost, &eos); err != nil || !eos || len(data) != 0 {
		t.Errorf("read across close: %q %v eos %v (%v)", data, e, eos, err)
	}
	la.decode("DPrintf", "open", []any{nil}, &e, &again)
	if again == "" || again == sid {
		t.Errorf("open after close: %q (was %q)", again, sid)
	}
}

// BenchmarkLiveDPrintf measures one dynamic-printf hit on a live process:
// the stop, the evaluation of three arguments in the top frame, the
// formatting and the resume (dis_svc_prog with b.N iterations).
func BenchmarkLiveDPrintf(b *testing.B) {
	prog := disProg(b)
	la := startLive(b)
	var e error
	var sid string
	la.decode("DPrintf", "open", []any{nil}, &e, &sid)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, []string{strconv.Itoa(b.N)}, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	step := sourceLine(b, "dis_svc_prog.c", "DIS_STEP_LINE")
	la.ok("Breakpoints", "add", map[string]any{"ID": "dp-bench", "Enabled": true, "File": "dis_svc_prog.c", "Line": step,
		"Condition": `$printf("step %d tag=%s sq=%d\n", i, tag, i*i)`})
	m1 := la.events.mark()
	b.ResetTimer()
	la.ok("RunControl", "resume", thread, 0, 1)
	la.events.wait(b, m1, "Processes.exited", is("Processes", "exited", proc))
	b.StopTimer()
	var data []byte
	var lost uint64
	var eos bool
	la.decode("Streams", "read", []any{sid, 64}, &data, &e, &lost, &eos)
	if !strings.HasPrefix(string(data), "step 0 tag=loop sq=0\n") {
		b.Fatalf("stream starts with %q", data)
	}
}
