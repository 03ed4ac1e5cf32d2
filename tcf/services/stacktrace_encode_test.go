package services

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	"github.com/sondedbg/sonde/unwind"
)

// appendFrameProps must write what encoding/json writes for frameProps (it
// replaced it): clients parse these objects, and golden replies hold them.
func TestAppendFramePropsMatchesEncodingJSON(t *testing.T) {
	for _, p := range []frameProps{
		{},
		{ID: "FP0.P1.1", ParentID: "P1.1", ProcessID: "P1", TopFrame: true, Walk: true, IP: 0x401000, FP: 0x7ffc0000},
		{ID: "FP56.P99.100", ParentID: "P99.100", ProcessID: "P99", Index: 56, Level: 0, IP: 1<<64 - 1, RP: 1, Inlined: 2,
			FuncID: "F@P99@7fff0010@0"},
		{ID: "FP3.P9.9", Inlined: 1, FuncID: "F@P9@10@1", CodeArea: &frameCodeArea{SAddr: 16, SLine: 26, SCol: 37, File: "a \"b\".cc", Dir: "/src"}},
		{ID: "FP4.P9.9", CodeArea: &frameCodeArea{SAddr: 1 << 63}},
		{ID: "FP5.P9.9", IP: 0x401005, TailCall: true, CodeArea: &frameCodeArea{SAddr: 0x401004, SLine: 3}},
		{ID: "x\"\\\n\x01é", Index: -1, Level: 1 << 40, FP: 1 << 63},
	} {
		want, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendFrameProps(nil, &p); string(got) != string(want) {
			t.Errorf("appendFrameProps:\n got %s\nwant %s", got, want)
		}
	}
}

// A stop's answers taken from the stop before must be the ones encoded
// afresh: stacks of other depths, other frames at the top, in the middle,
// at the bottom, inline frames, a return address that changed.
func TestThreadStopReusesSameFrames(t *testing.T) {
	owner := stackOwner{"P7.8", "P7"}
	ids := make([]string, 80)
	for i := range ids {
		ids[i] = fmt.Sprintf("FP%d.P7.8", i)
	}
	mod := &unwind.Module{Name: "m"}
	stack := func(n int) *unwind.Trace {
		tr := &unwind.Trace{Stop: unwind.StopOutermost}
		for i := range n {
			tr.Frames = append(tr.Frames, unwind.StackFrame{Index: i, Physical: i, PC: 0x1000 + uint64(i)*16,
				CFA: 0x7000 + uint64(i)*64, Module: mod, HasSymbol: true, Symbol: unwind.Symbol{Function: "f"}})
		}
		return tr
	}
	r := rand.New(rand.NewSource(3))
	prev := newThreadStop(owner, stack(57), ids, nil)
	reused := 0
	for round := range 300 {
		tr := stack(55 + r.Intn(4))
		for range r.Intn(3) {
			f := &tr.Frames[r.Intn(len(tr.Frames))]
			switch r.Intn(4) {
			case 0:
				f.PC++
			case 1:
				f.CFA += 8
			case 2:
				f.Kind = unwind.KindInline
			case 3:
				f.Module = nil
			}
		}
		got := newThreadStop(owner, tr, ids, prev)
		want := newThreadStop(owner, tr, ids, nil)
		if string(got.children) != string(want.children) {
			t.Fatalf("round %d: children\n got %s\nwant %s", round, got.children, want.children)
		}
		for i := range want.frames {
			if string(got.frames[i]) != string(want.frames[i]) {
				t.Fatalf("round %d, frame %d:\n got %s\nwant %s", round, i, got.frames[i], want.frames[i])
			}
			if len(prev.frames) == len(want.frames) && &got.frames[i][0] == &prev.frames[i][0] {
				reused++
			}
		}
		prev = got
	}
	if reused == 0 {
		t.Error("no answer reused")
	}
	t.Logf("%d answers reused", reused)
}
