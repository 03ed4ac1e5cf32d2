package gdbtest

import (
	"debug/elf"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestBacktracesAndInfoSymbols runs hello to a breakpoint on printf under
// gdb and checks what the parsers make of gdb's answers: printf's frame
// above main's, main's file and line, and `info symbol` naming main and
// nothing at address 0.
func TestBacktracesAndInfoSymbols(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"hello.c"}, Flags: []string{"-O0"}})
	threads := Backtraces(t, []string{"break main", "run", "break printf", "continue"}, "--args", exe)
	if len(threads) != 1 || threads[0].TID == 0 {
		t.Fatalf("threads %+v, want one", threads)
	}
	var main *Frame
	for i, f := range threads[0].Frames {
		if f.Name == "main" {
			main = &threads[0].Frames[i]
			if i == 0 {
				t.Errorf("main is the innermost frame: %+v", threads[0].Frames)
			}
		}
	}
	if main == nil || main.Type != NormalFrame || !strings.HasSuffix(main.File, "hello.c") || main.Line != 4 {
		t.Fatalf("main's frame %+v in %+v, want hello.c:4", main, threads[0].Frames)
	}
	if threads[0].Stop == "" {
		t.Errorf("no stop reason: %+v", threads[0])
	}

	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var mainAddr uint64
	for _, s := range syms {
		if s.Name == "main" {
			mainAddr = s.Value
		}
	}
	got := InfoSymbols(t, exe, []uint64{mainAddr + 1, 0})
	if !strings.HasPrefix(got[0], "main + 1 in section .text") || !strings.HasPrefix(got[1], "No symbol matches") {
		t.Errorf("info symbol: %q", got)
	}
}

func TestParseBacktraces(t *testing.T) {
	out := "warning: x\nTHREAD|7\nFRAME|0|0x10|f|a.c|3\nFRAME|2|0x20|g||0\nSTOP|outermost\nTHREAD|5\nFRAME|4|0x30|||0\n"
	got := ParseBacktraces(out)
	if len(got) != 2 || got[0].TID != 7 || len(got[0].Frames) != 2 || got[0].Stop != "outermost" ||
		got[0].Frames[1] != (Frame{Type: InlineFrame, PC: 0x20, Name: "g"}) ||
		got[1].Frames[0] != (Frame{Type: SigtrampFrame, PC: 0x30}) {
		t.Errorf("%+v", got)
	}
}
