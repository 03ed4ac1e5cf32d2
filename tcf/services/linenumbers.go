package services

import (
	"path/filepath"
	"sort"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// maxCodeAreas bounds one mapToSource reply (a huge range must not make the
// agent build an unbounded answer).
const maxCodeAreas = 100000

// codeArea is one line-table row as TCF's LineNumbers service reports it.
type codeArea struct {
	SAddr      uint64 `json:"SAddr"`
	EAddr      uint64 `json:"EAddr"`
	File       string `json:"File"`
	Dir        string `json:"Dir,omitempty"`
	SLine      int    `json:"SLine"`
	SCol       int    `json:"SCol"`
	ELine      int    `json:"ELine"`
	ECol       int    `json:"ECol"`
	IsStmt     bool   `json:"IsStmt"`
	NAddr      uint64 `json:"NAddr,omitempty"`
	NStmtAddr  uint64 `json:"NStmtAddr,omitempty"`
	BasicBlock bool   `json:"BasicBlock,omitempty"`
}

// lineNumbersSvc is the LineNumbers service's commands, through session.
type lineNumbersSvc struct {
	a *Agent
}

// RegisterLineNumbers adds the LineNumbers service.
func (a *Agent) RegisterLineNumbers() {
	ls := &lineNumbersSvc{a: a}
	svc := a.srv.Service("LineNumbers")
	svc.Command("mapToSource", ls.mapToSource)
	svc.Command("mapToMemory", ls.mapToMemory)
}

func (ls *lineNumbersSvc) mapToSource(c *tcf.Call) {
	a := ls.a
	args := c.Args()
	id := args.String()
	start, end := args.Uint64(), args.Uint64()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ctx, err := a.scopeContext(id)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	proc := string(ctx.Process().ID())
	key := replyKey{kind: kindMapToSource, lo: start, hi: end}
	if enc, ok := a.replies.get(proc, key); ok {
		c.Reply().Empty().RawJSON(enc).Send()
		return
	}
	var areas any
	if list := a.mapToSource(ctx, start, end); len(list) > 0 {
		areas = list
	}
	if enc := a.replies.put(proc, key, areas); enc != nil {
		c.Reply().Empty().RawJSON(enc).Send()
		return
	}
	c.Reply().Empty().Data(areas).Send()
}

func (ls *lineNumbersSvc) mapToMemory(c *tcf.Call) {
	a := ls.a
	args := c.Args()
	id, file := args.String(), args.String()
	line, col := args.Int(), args.Int()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ctx, err := a.scopeContext(id)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	addrs, err := a.session.LineAddresses(ctx, a.MapPath(file), line, col)
	if err != nil || len(addrs) == 0 {
		c.Reply().Error(nil).Null().Send()
		return
	}
	var out []codeArea
	for _, addr := range addrs {
		out = append(out, a.mapToSource(ctx, addr, addr+1)...)
	}
	c.Reply().Error(nil).Data(out).Send()
}

// scopeContext resolves the context argument of symbol-level commands: a
// process, a thread or a stack frame.
func (a *Agent) scopeContext(id string) (*target.Context, error) {
	if len(id) > 2 && id[:2] == "FP" {
		_, thread, err := a.ParseFrameID(id)
		return thread, err
	}
	return a.lookup(id)
}

// mapToSource lists the line-table rows covering [start, end) in ctx's
// process, as code areas.
func (a *Agent) mapToSource(ctx *target.Context, start, end uint64) []codeArea {
	mods, err := a.session.Modules(ctx)
	if err != nil {
		return nil
	}
	if end <= start {
		end = start + 1
	}
	var out []codeArea
	for addr := start; addr < end && len(out) < maxCodeAreas; {
		m := mods.ForAddress(addr)
		if m == nil {
			break
		}
		b, _ := a.session.Binary(m)
		if b == nil {
			break
		}
		rows, _ := b.LineSequence(addr - m.Bias)
		if len(rows) == 0 {
			break
		}
		next := rows[len(rows)-1].Addr + m.Bias
		for i := 0; i+1 < len(rows); i++ {
			r := rows[i]
			lo, hi := r.Addr+m.Bias, rows[i+1].Addr+m.Bias
			if hi <= addr || lo >= end || lo == hi {
				continue
			}
			if !r.IsStmt {
				// Several rows at one address (optimized code): the line of
				// the address is its last statement row's, as gdb and
				// addr2line say.
				for k := i - 1; k >= 0 && rows[k].Addr == r.Addr; k-- {
					if rows[k].IsStmt {
						r.Line, r.Column, r.IsStmt = rows[k].Line, rows[k].Column, true
						break
					}
				}
			}
			ca := codeArea{SAddr: lo, EAddr: hi, File: filepath.Base(r.File), Dir: filepath.Dir(r.File),
				SLine: r.Line, SCol: r.Column, ELine: rows[i+1].Line, ECol: rows[i+1].Column, IsStmt: r.IsStmt}
			if !rows[i+1].EndSequence {
				ca.NAddr = hi
			}
			for k := i + 1; k+1 < len(rows); k++ {
				if rows[k].IsStmt {
					ca.NStmtAddr = rows[k].Addr + m.Bias
					break
				}
			}
			out = append(out, ca)
		}
		if next <= addr {
			break
		}
		addr = next
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SAddr < out[j].SAddr })
	return out
}
