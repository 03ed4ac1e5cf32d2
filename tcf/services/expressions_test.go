package services_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf/client"
	"github.com/sondedbg/sonde/variables/vartest"
)

// exprFixture is ex_vars stopped in stop_here (called from compute), seen by
// gdb and served by the agent from a core written at that stop.
func exprFixture(t *testing.T, flags []string, exprs map[int][]string) (*vartest.Stop, *client.Client, string) {
	stop, c, thread, _ := exprFixtureAddr(t, flags, exprs)
	return stop, c, thread
}

// exprFixtureAddr also returns the agent's address, for more channels.
func exprFixtureAddr(t *testing.T, flags []string, exprs map[int][]string) (*vartest.Stop, *client.Client, string, string) {
	t.Helper()
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: flags, Name: "ex_vars_" + strings.Join(flags, "")})
	stop := vartest.GDBStop(t, exe, "stop_here", exprs)
	tgt, th := stop.Open(t)
	c, addr := serveTarget(t, tgt)
	return stop, c, string(th.ID()), addr
}

// serveTarget serves every service over tgt on a loopback port and returns
// a connected client and the address.
func serveTarget(tb testing.TB, tgt *target.Target) (*client.Client, string) {
	tb.Helper()
	return serveAgent(tb, tgt, false)
}

func leInt(b []byte) int64 {
	var w [8]byte
	copy(w[:], b)
	n := int64(binary.LittleEndian.Uint64(w[:]))
	if len(b) < 8 && len(b) > 0 {
		shift := 64 - 8*uint(len(b))
		n = n << shift >> shift
	}
	return n
}

func TestExpressionsService(t *testing.T) {
	for _, flags := range [][]string{{"-O0", "-gdwarf-4"}, {"-O2", "-gdwarf-5"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			exprs := map[int][]string{1: {"a", "local", "inner", "vla_n", "g_arr[2][3] + a", "g_outer.pts[1].y * 2", "sizeof(struct outer)"}}
			stop, c, thread := exprFixture(t, flags, exprs)
			var rerr error
			var frames []string
			call(t, c, "StackTrace", "getChildrenRange", thread, 0, 10).Decode(&rerr, &frames)
			if len(frames) < 3 {
				t.Fatalf("frames %v %v", frames, rerr)
			}
			fp1 := frames[1]

			// The frame's locals, as a Variables view lists them.
			var kids []string
			call(t, c, "Expressions", "getChildren", fp1).Decode(&rerr, &kids)
			if rerr != nil || len(kids) < 8 {
				t.Fatalf("children of %s: %v %v", fp1, kids, rerr)
			}
			seen := map[string]bool{}
			for _, id := range kids {
				var props map[string]any
				call(t, c, "Expressions", "getContext", id).Decode(&rerr, &props)
				name, _ := props["Expression"].(string)
				seen[name] = true
				var val []byte
				var vprops map[string]any
				call(t, c, "Expressions", "evaluate", id).Decode(&val, &rerr, &vprops)
				want, ok := stop.Results[1][name]
				if !ok {
					continue
				}
				switch {
				case want.OptimizedOut:
					if rerr == nil {
						t.Errorf("%s: gdb says optimized out, agent gives % x", name, val)
					}
				case want.Int != nil:
					if rerr != nil || leInt(val) != *want.Int {
						t.Errorf("%s: agent %d (%v), gdb %d", name, leInt(val), rerr, *want.Int)
					}
					if props["Type"] == nil || vprops["Type"] != props["Type"] || vprops["Symbol"] == nil {
						t.Errorf("%s: props %v, value props %v", name, props, vprops)
					}
				}
			}
			for _, n := range []string{"a", "b", "p", "pp", "s", "local", "d", "buf", "vla_n", "vla", "inner"} {
				if !seen[n] {
					t.Errorf("frame 1 lacks %s (has %v)", n, seen)
				}
			}

			// Expressions created in the frame's scope.
			for _, src := range exprs[1][4:] {
				var props map[string]any
				call(t, c, "Expressions", "create", fp1, nil, src).Decode(&rerr, &props)
				if rerr != nil {
					t.Fatalf("create %q: %v", src, rerr)
				}
				var val []byte
				var vprops map[string]any
				call(t, c, "Expressions", "evaluate", props["ID"]).Decode(&val, &rerr, &vprops)
				if want := stop.Results[1][src]; rerr != nil || leInt(val) != *want.Int {
					t.Errorf("%s: agent %d (%v), gdb %s", src, leInt(val), rerr, want.Value)
				}
				call(t, c, "Expressions", "dispose", props["ID"]).Decode(&rerr)
				if rerr != nil {
					t.Errorf("dispose: %v", rerr)
				}
			}

			// createInScope with a scope object; a memory value has an Address.
			var props map[string]any
			call(t, c, "Expressions", "createInScope", map[string]any{"ContextID": thread}, "g_pt").Decode(&rerr, &props)
			if rerr != nil || props["CanAssign"] != true || num(props["Size"]) != 8 {
				t.Fatalf("createInScope: %v %v", props, rerr)
			}
			var val []byte
			var vprops map[string]any
			call(t, c, "Expressions", "evaluate", props["ID"]).Decode(&val, &rerr, &vprops)
			if rerr != nil || len(val) != 8 || leInt(val[:4]) != 3 || leInt(val[4:]) != -4 || vprops["Address"] == nil {
				t.Errorf("g_pt: % x %v %v", val, vprops, rerr)
			}

			// Errors carry TCF codes.
			for src, code := range map[string]int{"a +": 18, "nosuch + 1": 22} {
				call(t, c, "Expressions", "create", fp1, nil, src).Decode(&rerr, &props)
				if errCode(t, rerr) != code {
					t.Errorf("create %q: %v, want code %d", src, rerr, code)
				}
			}
			for src, code := range map[string]int{"*g_null": 17, "a / (a - a)": 18, "g_int = 5": 23} {
				call(t, c, "Expressions", "create", fp1, nil, src).Decode(&rerr, &props)
				if rerr != nil {
					t.Fatalf("create %q: %v", src, rerr)
				}
				res := call(t, c, "Expressions", "evaluate", props["ID"])
				if len(res.Fields) != 3 {
					t.Fatalf("evaluate reply has %d fields", len(res.Fields))
				}
				res.Decode(&val, &rerr, &vprops)
				if errCode(t, rerr) != code || val != nil {
					t.Errorf("evaluate %q: % x %v, want code %d", src, val, rerr, code)
				}
			}
			call(t, c, "Expressions", "create", fp1, nil, "g_int").Decode(&rerr, &props)
			call(t, c, "Expressions", "assign", props["ID"], []byte{1, 0, 0, 0}).Decode(&rerr)
			if errCode(t, rerr) != 23 {
				t.Errorf("assign on a core: %v", rerr)
			}
			// Location info of every local: a location list entry has its
			// code range; every form decodes to commands.
			var syms []string
			call(t, c, "Symbols", "list", fp1).Decode(&rerr, &syms)
			lists := 0
			for _, id := range syms {
				var loc map[string]any
				call(t, c, "Symbols", "getLocationInfo", id).Decode(&rerr, &loc)
				if rerr != nil {
					continue // optimized out here
				}
				if cmds, _ := loc["ValueCmds"].([]any); cmds == nil && loc["Value"] == nil {
					t.Errorf("location of %s: %v", id, loc)
				}
				if loc["CodeAddr"] != nil {
					lists++
					if num(loc["CodeSize"]) == 0 {
						t.Errorf("location of %s: empty code range %v", id, loc)
					}
				}
			}
			if flags[0] == "-O2" && lists == 0 {
				t.Errorf("no location lists among %d locals at -O2", len(syms))
			}
			call(t, c, "Expressions", "evaluate", "EXPR999999").Decode(&val, &rerr, &vprops)
			if errCode(t, rerr) != 16 {
				t.Errorf("unknown expression: %v", rerr)
			}
		})
	}
}

func TestExpressionsDroppedWithChannel(t *testing.T) {
	_, c, thread, addr := exprFixtureAddr(t, []string{"-O0"}, map[int][]string{0: {"n"}})
	// A second channel creates an expression, then closes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c2, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	var props map[string]any
	call(t, c2, "Expressions", "create", thread, nil, "n * 2").Decode(&rerr, &props)
	id, _ := props["ID"].(string)
	if rerr != nil || id == "" {
		t.Fatalf("create: %v %v", props, rerr)
	}
	var val []byte
	var vprops map[string]any
	call(t, c, "Expressions", "evaluate", id).Decode(&val, &rerr, &vprops)
	if rerr != nil {
		t.Fatalf("another channel's expression: %v", rerr)
	}
	c2.Close()
	for i := 0; ; i++ {
		call(t, c, "Expressions", "evaluate", id).Decode(&val, &rerr, &vprops)
		if errCode(t, rerr) == 16 {
			break
		}
		if i > 100 {
			t.Fatalf("expression %s survived its channel: %v", id, rerr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSymbolsTypesAndLocals(t *testing.T) {
	_, c, thread := exprFixture(t, []string{"-O0", "-gdwarf-5"}, map[int][]string{1: {"local"}})
	var rerr error
	var frames []string
	call(t, c, "StackTrace", "getChildrenRange", thread, 0, 10).Decode(&rerr, &frames)
	fp1 := frames[1]
	var fctx []map[string]any
	call(t, c, "StackTrace", "getContext", []string{fp1}).Decode(&fctx, &rerr)
	cfa := num(fctx[0]["FP"])

	// Locals of the frame through Symbols.list; getContext locates them.
	var locals []string
	call(t, c, "Symbols", "list", fp1).Decode(&rerr, &locals)
	if rerr != nil || len(locals) < 8 {
		t.Fatalf("list: %v %v", locals, rerr)
	}
	var localID string
	for _, id := range locals {
		var p map[string]any
		call(t, c, "Symbols", "getContext", id).Decode(&rerr, &p)
		if p["Name"] == "local" {
			localID = id
			if num(p["Class"]) != 2 || p["Address"] == nil || num(p["UpdatePolicy"]) != 1 || p["TypeID"] == nil {
				t.Errorf("local: %v", p)
			}
			// getLocationInfo: gcc -O0 puts it at the frame base (the CFA) +
			// offset, written flat as the C agent does: CMD_FP, CMD_NUMBER off, CMD_ADD.
			var loc map[string]any
			call(t, c, "Symbols", "getLocationInfo", id).Decode(&rerr, &loc)
			cmds, _ := loc["ValueCmds"].([]any)
			if rerr != nil || len(cmds) != 4 || num(cmds[0]) != 3 || num(cmds[1]) != 1 || num(cmds[3]) != 5 {
				t.Fatalf("location of local: %v %v", loc, rerr)
			}
			off, _ := cmds[2].(json.Number).Int64()
			if cfa+uint64(off) != num(p["Address"]) {
				t.Errorf("FP %#x + %d != Address %#x", cfa, off, num(p["Address"]))
			}
			var tp map[string]any
			call(t, c, "Symbols", "getContext", p["TypeID"]).Decode(&rerr, &tp)
			if tp["Name"] != "int" || num(tp["TypeClass"]) != 2 || num(tp["Size"]) != 4 {
				t.Errorf("type of local: %v %v", tp, rerr)
			}
		}
	}
	if localID == "" {
		t.Fatal("no symbol for local")
	}

	// A struct type: members with offsets and types; arrays; enums.
	var ids []string
	call(t, c, "Symbols", "findInScope", fp1, 0, nil, "g_outer").Decode(&rerr, &ids)
	if rerr != nil || len(ids) == 0 {
		t.Fatalf("findInScope g_outer: %v %v", ids, rerr)
	}
	var gp, tp map[string]any
	call(t, c, "Symbols", "getContext", ids[0]).Decode(&rerr, &gp)
	call(t, c, "Symbols", "getContext", gp["TypeID"]).Decode(&rerr, &tp)
	if num(tp["TypeClass"]) != 6 || num(tp["Size"]) != 32 || tp["Name"] != "outer" {
		t.Fatalf("struct outer: %v %v", tp, rerr)
	}
	var members []string
	call(t, c, "Symbols", "getChildren", gp["TypeID"]).Decode(&rerr, &members)
	want := []struct {
		name      string
		off, size uint64
		class     uint64
	}{{"tag", 0, 1, 2}, {"pts", 4, 16, 5}, {"w", 20, 4, 6}, {"avg", 24, 8, 3}}
	if len(members) != len(want) {
		t.Fatalf("members %v %v", members, rerr)
	}
	for i, id := range members {
		var mp, mt map[string]any
		call(t, c, "Symbols", "getContext", id).Decode(&rerr, &mp)
		call(t, c, "Symbols", "getContext", mp["TypeID"]).Decode(&rerr, &mt)
		if mp["Name"] != want[i].name || num(mp["Offset"]) != want[i].off || num(mp["Size"]) != want[i].size || num(mt["TypeClass"]) != want[i].class {
			t.Errorf("member %d: %v, type %v", i, mp, mt)
		}
		if want[i].name == "pts" {
			if num(mt["Length"]) != 2 || mt["BaseTypeID"] == nil {
				t.Errorf("pts type: %v", mt)
			}
			var arr string
			call(t, c, "Symbols", "getArrayType", mt["BaseTypeID"], 5).Decode(&rerr, &arr)
			var at map[string]any
			call(t, c, "Symbols", "getContext", arr).Decode(&rerr, &at)
			if num(at["Length"]) != 5 || num(at["Size"]) != 40 || num(at["TypeClass"]) != 5 {
				t.Errorf("getArrayType: %v %v", at, rerr)
			}
		}
	}
	call(t, c, "Symbols", "findInScope", fp1, 0, nil, "g_color").Decode(&rerr, &ids)
	call(t, c, "Symbols", "getContext", ids[0]).Decode(&rerr, &gp)
	var enumerators []string
	call(t, c, "Symbols", "getChildren", gp["TypeID"]).Decode(&rerr, &enumerators)
	if len(enumerators) != 3 {
		t.Fatalf("enumerators %v %v", enumerators, rerr)
	}
	var ep map[string]any
	call(t, c, "Symbols", "getContext", enumerators[1]).Decode(&rerr, &ep)
	if ep["Name"] != "GREEN" || ep["Value"] != "BQAAAA==" || num(ep["Class"]) != 1 {
		t.Errorf("GREEN: %v", ep)
	}
	// Self-referential types resolve to the same ID.
	call(t, c, "Symbols", "findInScope", fp1, 0, nil, "g_n1").Decode(&rerr, &ids)
	call(t, c, "Symbols", "getContext", ids[0]).Decode(&rerr, &gp)
	call(t, c, "Symbols", "getChildren", gp["TypeID"]).Decode(&rerr, &members)
	var next, ptr map[string]any
	call(t, c, "Symbols", "getContext", members[1]).Decode(&rerr, &next)
	call(t, c, "Symbols", "getContext", next["TypeID"]).Decode(&rerr, &ptr)
	if ptr["BaseTypeID"] != gp["TypeID"] {
		t.Errorf("node.next points to %v, want %v", ptr["BaseTypeID"], gp["TypeID"])
	}
	// Eclipse's Variables view builds expressions from IDs: a cast to a type
	// by ID, members by ID, registers by ID.
	var valueMember map[string]any
	call(t, c, "Symbols", "getContext", members[0]).Decode(&rerr, &valueMember)
	for src, want := range map[string]int64{
		"((${" + next["TypeID"].(string) + "})&g_n2)->${" + members[0] + "}": 2,
		"g_n1.${" + members[1] + "}->${" + members[0] + "}":                  2,
		"(${" + next["TypeID"].(string) + "})0 == 0":                         1,
	} {
		var props map[string]any
		call(t, c, "Expressions", "create", fp1, nil, src).Decode(&rerr, &props)
		if rerr != nil {
			t.Errorf("create %q: %v", src, rerr)
			continue
		}
		var val []byte
		var vp map[string]any
		call(t, c, "Expressions", "evaluate", props["ID"]).Decode(&val, &rerr, &vp)
		if rerr != nil || leInt(val) != want {
			t.Errorf("%s = %d (%v), want %d", src, leInt(val), rerr, want)
		}
	}
	var regs []string
	call(t, c, "Registers", "getChildren", thread).Decode(&rerr, &regs)
	for _, rid := range regs {
		var rp map[string]any
		call(t, c, "Registers", "getContext", rid).Decode(&rerr, &rp)
		if rp["Name"] != "rsp" {
			continue
		}
		var props map[string]any
		call(t, c, "Expressions", "create", thread, nil, "${"+rid+"} == $rsp").Decode(&rerr, &props)
		var val []byte
		var vp map[string]any
		call(t, c, "Expressions", "evaluate", props["ID"]).Decode(&val, &rerr, &vp)
		if rerr != nil || leInt(val) != 1 {
			t.Errorf("${rsp ID} == $rsp: %d %v", leInt(val), rerr)
		}
	}
	// Symbols.find in a frame finds its locals first.
	var found string
	call(t, c, "Symbols", "find", fp1, 0, "inner").Decode(&rerr, &found)
	if rerr != nil || !strings.HasPrefix(found, "L@"+fp1+"@") {
		t.Errorf("find inner in %s: %q %v", fp1, found, rerr)
	}
	// The parameters of a function symbol.
	var fn string
	var fnID string
	call(t, c, "Symbols", "findByAddr", fp1, num(fctx[0]["IP"])-1).Decode(&rerr, &fn)
	fnID = fn
	var params []string
	call(t, c, "Symbols", "getChildren", fnID).Decode(&rerr, &params)
	var pnames []string
	for _, id := range params {
		var pp map[string]any
		call(t, c, "Symbols", "getContext", id).Decode(&rerr, &pp)
		pnames = append(pnames, pp["Name"].(string))
		if num(pp["Flags"])&1 == 0 {
			t.Errorf("parameter %v lacks SYM_FLAG_PARAMETER", pp)
		}
	}
	if strings.Join(pnames, ",") != "a,b,p,pp,s" {
		t.Errorf("parameters of compute: %v (%v)", pnames, rerr)
	}
	call(t, c, "Symbols", "findInScope", fp1, 0, nil, "no_such_name").Decode(&rerr, &ids)
	if errCode(t, rerr) != 22 {
		t.Errorf("unknown name: %v", rerr)
	}
	call(t, c, "Symbols", "getContext", "T@P1@zz@1").Decode(&rerr, &gp)
	if rerr == nil {
		t.Error("malformed type ID accepted")
	}
}

// TestExpressionsInlinedFrames: a frame of an inlined call sees its own
// variables, the frame of the function it is inlined into sees its own.
func TestExpressionsInlinedFrames(t *testing.T) {
	for _, flags := range [][]string{{"-O0", "-gdwarf-5"}, {"-O2", "-gdwarf-4"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			exprs := map[int][]string{0: {"v"}, 1: {"x", "m", "x + m"}, 2: {"y", "o", "y * 2"}}
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_inline.c"}, Flags: flags, Name: "ex_inline_" + strings.Join(flags, "")})
			stop := vartest.GDBStop(t, exe, "leaf", exprs)
			tgt, th := stop.Open(t)
			c := startAgent(t, tgt)
			thread := string(th.ID())
			var rerr error
			var frames []string
			call(t, c, "StackTrace", "getChildrenRange", thread, 0, 10).Decode(&rerr, &frames)
			compared := 0
			for fi, list := range exprs {
				var kids []string
				call(t, c, "Expressions", "getChildren", frames[fi]).Decode(&rerr, &kids)
				var names []string
				for _, id := range kids {
					var p map[string]any
					call(t, c, "Expressions", "getContext", id).Decode(&rerr, &p)
					names = append(names, p["Expression"].(string))
				}
				for _, src := range list {
					want := stop.Results[fi][src]
					if !strings.Contains(src, " ") && !slices.Contains(names, src) && want.Error == "" {
						t.Errorf("frame %d lists %v, not %s", fi, names, src)
					}
					var props map[string]any
					call(t, c, "Expressions", "create", frames[fi], nil, src).Decode(&rerr, &props)
					if rerr != nil {
						t.Errorf("frame %d: create %q: %v", fi, src, rerr)
						continue
					}
					var val []byte
					var vp map[string]any
					call(t, c, "Expressions", "evaluate", props["ID"]).Decode(&val, &rerr, &vp)
					switch {
					case want.OptimizedOut:
						if rerr == nil {
							t.Errorf("frame %d %s: gdb says optimized out, agent % x", fi, src, val)
						}
					case want.Int != nil:
						if rerr != nil || leInt(val) != *want.Int {
							t.Errorf("frame %d %s: agent %d (%v), gdb %s", fi, src, leInt(val), rerr, want.Value)
						}
						compared++
					}
				}
			}
			if compared < 5 {
				t.Fatalf("only %d values compared", compared)
			}
		})
	}
}
