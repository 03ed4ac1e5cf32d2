package services_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// frameCmdEval runs the C agent's location commands (flat: opcode, then its
// arguments) the way a client that unwinds by itself does, reading registers
// and memory of the live process through the agent.
type frameCmdEval struct {
	t    *testing.T
	la   *liveAgent
	proc string
	fp   uint64
}

func (ev *frameCmdEval) run(cmds []any) uint64 {
	ev.t.Helper()
	var st []uint64
	pop := func() uint64 {
		if len(st) == 0 {
			ev.t.Fatalf("commands %v pop an empty stack", cmds)
		}
		v := st[len(st)-1]
		st = st[:len(st)-1]
		return v
	}
	for i := 0; i < len(cmds); {
		op := num(cmds[i])
		i++
		switch op {
		case 1: // number
			st = append(st, uint64(int64num(cmds[i])))
			i++
		case 2: // read register
			var e error
			var v []byte
			ev.la.decode("Registers", "get", []any{cmds[i]}, &e, &v)
			if len(v) != 8 {
				ev.t.Fatalf("register %v: %d bytes", cmds[i], len(v))
			}
			st = append(st, binary.LittleEndian.Uint64(v))
			i++
		case 3: // frame address
			st = append(st, ev.fp)
		case 4: // read memory: size, big-endian
			size := int(num(cmds[i]))
			i += 2
			var data []byte
			var e error
			var ranges any
			ev.la.decode("Memory", "get", []any{ev.proc, pop(), 1, size, 0}, &data, &e, &ranges)
			var w [8]byte
			copy(w[:], data)
			st = append(st, binary.LittleEndian.Uint64(w[:]))
		case 5: // add
			b, a := pop(), pop()
			st = append(st, a+b)
		default:
			ev.t.Fatalf("command %d in %v not expected from this program's CFI", op, cmds)
		}
	}
	if len(st) != 1 {
		ev.t.Fatalf("commands %v leave %d values", cmds, len(st))
	}
	return st[0]
}

func int64num(v any) int64 {
	if n, ok := v.(json.Number); ok {
		i, _ := n.Int64()
		return i
	}
	return int64(num(v))
}

// TestLiveFindFrameInfo stops in dis_step and checks that the commands
// findFrameInfo gives, run as a client runs them, compute the frame address
// and the caller's pc and stack pointer the StackTrace service reports; that
// the rule at the function's entry is readelf's (CFA rsp+8, return address
// at CFA-8); and that an address without CFI gets no rule and no error.
func TestLiveFindFrameInfo(t *testing.T) {
	prog := disProg(t)
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	bias := loadBias(t, la, proc, prog)
	entry := bias + objdumpFunction(t, prog, "dis_step", false)[0].addr
	// A line breakpoint: after the prologue, where rbp is saved.
	line := sourceLine(t, "dis_svc_prog.c", "DIS_STEP_LINE")
	la.ok("Breakpoints", "add", map[string]any{"ID": "ffi", "Enabled": true, "File": "dis_svc_prog.c", "Line": line})
	pc, reason, _ := la.resume(thread, 0)
	if reason != "Breakpoint" {
		t.Fatalf("stopped for %q", reason)
	}

	frameInfo := func(addr uint64) (uint64, uint64, []any, map[string][]any) {
		t.Helper()
		var e error
		var a, size uint64
		var fp []any
		var regs map[string][]any
		r := la.call("Symbols", "findFrameInfo", thread, addr)
		if len(r.Fields) != 5 {
			t.Fatalf("findFrameInfo reply has %d fields", len(r.Fields))
		}
		la.decode("Symbols", "findFrameInfo", []any{thread, addr}, &e, &a, &size, &fp, &regs)
		return a, size, fp, regs
	}
	rid := func(dwarf int) string { return fmt.Sprintf("R%d.%s", dwarf, thread) }
	// Register indexes: rbp 6, rsp 7, rip 16 in sonde's x86-64 register list
	// happen to equal their DWARF numbers.
	a, size, fp, regs := frameInfo(pc)
	if !(a <= pc && pc < a+size) || fp == nil || regs == nil {
		t.Fatalf("findFrameInfo(0x%x): [0x%x, +%d) fp %v regs %v", pc, a, size, fp, regs)
	}
	ev := &frameCmdEval{t: t, la: la, proc: proc}
	ev.fp = ev.run(fp)

	var e error
	var frames []string
	la.decode("StackTrace", "getChildrenRange", []any{thread, 0, 1}, &e, &frames)
	var ctxs []map[string]any
	la.decode("StackTrace", "getContext", []any{frames}, &ctxs, &e)
	if len(ctxs) != 2 {
		t.Fatalf("frames %v", ctxs)
	}
	if cfa := num(ctxs[0]["FP"]); ev.fp != cfa {
		t.Errorf("frame address 0x%x, StackTrace FP 0x%x", ev.fp, cfa)
	}
	if ra, callerPC := ev.run(regs[rid(16)]), num(ctxs[1]["IP"]); ra != callerPC {
		t.Errorf("caller's rip 0x%x (commands %v), StackTrace frame 1 IP 0x%x", ra, regs[rid(16)], callerPC)
	}
	if sp := ev.run(regs[rid(7)]); sp != ev.fp {
		t.Errorf("caller's rsp 0x%x, frame address 0x%x", sp, ev.fp)
	}
	if pc-entry < 4 {
		t.Fatalf("line breakpoint at entry+%d: before the prologue", pc-entry)
	}
	// rbp was saved at CFA-16: the caller's rbp is the frame's saved one.
	if want := []any{3.0, 1.0, -16.0, 5.0, 4.0, 8.0, false}; !reflect.DeepEqual(norm(regs[rid(6)]), want) {
		t.Errorf("rbp after the prologue %v, want %v", regs[rid(6)], want)
	}

	// At the entry (readelf: "LOC CFA ra / 116d rsp+8 c-8").
	a, size, fp, regs = frameInfo(entry)
	if a != entry || size != 1 {
		t.Errorf("entry row [0x%x, +%d), want [0x%x, +1)", a, size, entry)
	}
	if want := []any{2.0, rid(7), 1.0, 8.0, 5.0}; !reflect.DeepEqual(norm(fp), want) {
		t.Errorf("entry FP %v, want %v", fp, want)
	}
	if want := []any{3.0, 1.0, -8.0, 5.0, 4.0, 8.0, false}; !reflect.DeepEqual(norm(regs[rid(16)]), want) {
		t.Errorf("entry rip %v, want %v", regs[rid(16)], want)
	}

	// No module there: no rule, no error; findFrameProps has the same facts.
	a, size, fp, regs = frameInfo(0x10)
	if a != 0 || size != 0 || fp != nil || regs != nil {
		t.Errorf("unmapped: %x %d %v %v", a, size, fp, regs)
	}
	var props map[string]any
	la.decode("Symbols", "findFrameProps", []any{thread, entry}, &e, &props)
	if num(props["CodeAddr"]) != entry || num(props["CodeSize"]) != 1 || props["FP"] == nil || props["Regs"] == nil {
		t.Errorf("findFrameProps %v", props)
	}
	r := la.call("Symbols", "findFrameInfo", "P999999", entry)
	var x1, x2 uint64
	var x3, x4 any
	if err := r.Decode(&e, &x1, &x2, &x3, &x4); err != nil || errCode(t, e) != 16 {
		t.Errorf("unknown context: %v %v", err, e)
	}
}

// norm turns decoded JSON numbers into float64 for comparisons.
func norm(v []any) []any {
	out := make([]any, len(v))
	for i, x := range v {
		if n, ok := x.(json.Number); ok {
			f, _ := n.Float64()
			out[i] = f
		} else {
			out[i] = x
		}
	}
	return out
}
