package services

import (
	"errors"
	"fmt"

	"github.com/sondedbg/sonde/dwarfexpr"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// Symbols.findFrameInfo and findFrameProps give a client the stack-tracing
// rule at an address, so it can unwind by itself: the range of code the rule
// holds for, commands computing the frame address (the CFA), and per
// register of the caller, commands computing its value. They are derived from
// the CFI row (.eh_frame, else .debug_frame) at the address.
//
// Commands are the C agent's location commands (ISymbols.CMD_*), written as
// one flat array of opcodes each followed by its arguments, as the C agent
// writes them: [2,"R6.P1.1",1,16,5] is "read rbp, push 16, add". In register
// commands CMD_FP (3) pushes the frame address. An address without CFI gets
// zero address and size and null commands, without an error (the C agent's
// answer: the client falls back to its own heuristics).

// Location command opcodes (ISymbols.CMD_*) the frame commands use.
const (
	locNumber   = dwarfexpr.TCFNumber
	locRdReg    = dwarfexpr.TCFRdReg
	locFP       = dwarfexpr.TCFFP
	locRdMem    = dwarfexpr.TCFRdMem
	locAdd      = dwarfexpr.TCFAdd
	locLocation = dwarfexpr.TCFLocation
)

// FrameInfo is the stack-tracing rule at an address.
type FrameInfo struct {
	// Addr and Size bound the code the rule holds for (0, 0: no CFI).
	Addr, Size uint64
	// FP computes the frame address; nil when there is no rule.
	FP []any
	// Regs computes each recoverable register of the caller, by register ID.
	Regs map[string][]any
}

// RegisterSymbolFrameInfo adds findFrameInfo and findFrameProps to the
// Symbols service.
func (a *Agent) RegisterSymbolFrameInfo() {
	ys := &symbolsSvc{a: a}
	svc := a.srv.Service("Symbols")
	svc.Command("findFrameInfo", ys.findFrameInfo)
	svc.Command("findFrameProps", ys.findFrameProps)
}

// frameArgs reads findFrameInfo's and findFrameProps' arguments: a context
// and an address.
func (ys *symbolsSvc) frameArgs(c *tcf.Call) (*target.Context, uint64, error) {
	args := c.Args()
	id := args.String()
	addr := args.Uint64()
	if err := args.End(); err != nil {
		return nil, 0, err
	}
	ctx, err := ys.a.lookup(id)
	return ctx, addr, err
}

func (ys *symbolsSvc) findFrameInfo(c *tcf.Call) {
	a := ys.a
	var fi FrameInfo
	ctx, addr, err := ys.frameArgs(c)
	if err == nil {
		fi, err = a.FrameInfo(ctx, addr)
	}
	r := c.Reply().Error(err).Uint64(fi.Addr).Uint64(fi.Size)
	if fi.FP == nil {
		r = r.Null()
	} else {
		r = r.Data(fi.FP)
	}
	if fi.Regs == nil {
		r = r.Null()
	} else {
		r = r.Data(fi.Regs)
	}
	r.Send()
}

func (ys *symbolsSvc) findFrameProps(c *tcf.Call) {
	a := ys.a
	ctx, addr, err := ys.frameArgs(c)
	var fi FrameInfo
	if err == nil {
		fi, err = a.FrameInfo(ctx, addr)
	}
	props := map[string]any{}
	if fi.Size != 0 {
		props["CodeAddr"] = fi.Addr
		props["CodeSize"] = fi.Size
	}
	if fi.FP != nil {
		props["FP"] = fi.FP
	}
	if fi.Regs != nil {
		props["Regs"] = fi.Regs
	}
	c.Reply().Error(err).Data(props).Send()
}

// FrameInfo returns the stack-tracing rule at a run-time address of ctx's
// process. Register IDs name the registers of ctx when it is a thread, else
// of the process's first thread.
func (a *Agent) FrameInfo(ctx *target.Context, addr uint64) (FrameInfo, error) {
	var fi FrameInfo
	proc := ctx.Process()
	regCtx := ctx
	if ctx.IsProcess() {
		if th := ctx.Children(); len(th) > 0 {
			regCtx = th[0]
		}
	}
	rule, err := a.session.FrameRule(proc, addr)
	var fre *session.FrameRuleError
	if errors.As(err, &fre) {
		return fi, tcf.Errorf(tcf.CodeInvalidDWARF, "%v", err)
	}
	if err != nil || rule == nil {
		return fi, err
	}
	row := rule.Row
	reg := func(dwarf int) string {
		if id := a.registerID(regCtx, dwarf); id != "" {
			return id
		}
		return fmt.Sprintf("DWARF%d", dwarf)
	}
	fi.Addr, fi.Size = row.Start, row.End-row.Start
	fi.FP = cfaCommands(row.CFA, reg)
	fi.Regs = map[string][]any{}
	for i, r := range row.Regs {
		if cmds := regCommands(r, i, reg); cmds != nil {
			fi.Regs[reg(i)] = cmds
		}
	}
	// The caller's stack pointer is the frame address by definition of the
	// CFA on x86-64, whether or not the CFI says so.
	if _, ok := fi.Regs[reg(dwarfRSP)]; !ok && fi.FP != nil {
		fi.Regs[reg(dwarfRSP)] = []any{locFP}
	}
	return fi, nil
}

const dwarfRSP = 7

// cfaCommands computes the frame address.
func cfaCommands(r session.CFIRule, reg func(int) string) []any {
	switch r.Kind {
	case session.RuleCFARegOffset:
		return addOffset([]any{locRdReg, reg(int(r.Reg))}, r.Offset)
	case session.RuleCFAExpression:
		return exprCommands(r.Expr, reg, false)
	}
	return nil
}

// regCommands computes the caller's value of DWARF register i; nil when the
// CFI says nothing about it (the callee kept it) or it is not recoverable.
func regCommands(r session.CFIRule, i int, reg func(int) string) []any {
	switch r.Kind {
	case session.RuleSameValue:
		return []any{locRdReg, reg(i)}
	case session.RuleOffset:
		return append(addOffset([]any{locFP}, r.Offset), locRdMem, 8, false)
	case session.RuleValOffset:
		return addOffset([]any{locFP}, r.Offset)
	case session.RuleRegister:
		return []any{locRdReg, reg(int(r.Reg))}
	case session.RuleExpression:
		return append(exprCommands(r.Expr, reg, true), locRdMem, 8, false)
	case session.RuleValExpression:
		return exprCommands(r.Expr, reg, true)
	}
	return nil
}

func addOffset(cmds []any, off int64) []any {
	if off == 0 {
		return cmds
	}
	return append(cmds, locNumber, off, locAdd)
}

// exprCommands translates a CFI DWARF expression into location commands
// (withCFA: the CFA is pushed first, as for register rules). Expressions
// that use operations without a command counterpart (stack manipulation,
// branches) are passed whole as CMD_LOCATION.
func exprCommands(expr []byte, reg func(int) string, withCFA bool) []any {
	var cmds []any
	if withCFA {
		cmds = []any{locFP}
	}
	if out, ok := dwarfexpr.TCFCommands(expr, dwarfexpr.TCFOptions{Reg: reg}); ok {
		return append(cmds, out...)
	}
	return append(cmds, locLocation, expr, map[string]any{
		"Machine": 62, "ELF64": true, "RegIdType": 0, "AddrSize": 8, "BigEndian": false,
	})
}
