package services

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// Symbol IDs are opaque to clients. Two kinds exist here:
//
//	F@<process>@<hex pc>@<depth>  the function at inline depth <depth> (0 the
//	                              innermost) at run-time address pc
//	V@<process>@<hex addr>@<name> a variable with a static address
//
// They stay valid while the process's modules do (UpdatePolicy 0: "on memory
// map change").

// TCF symbol classes and type classes used here.
const (
	symClassValue     = 1
	symClassReference = 2
	symClassFunction  = 3
	typeClassFunction = 8
)

// symbolsSvc is the Symbols service's commands: functions, lines and data symbols through session, and call-frame rules.
type symbolsSvc struct {
	a *Agent
}

// RegisterSymbols adds the Symbols service (functions and static variables by
// address and by name, and the module of an address).
func (a *Agent) RegisterSymbols() {
	ys := &symbolsSvc{a: a}
	svc := a.srv.Service("Symbols")
	a.registerSymbolData(svc) // types, variables, frames (symbols_types.go)
	svc.Command("getContext", ys.getContext)
	svc.Command("findByAddr", ys.findByAddr)
	svc.Command("find", ys.find)
	svc.Command("findByName", ys.findByName)
	svc.Command("getSymFileInfo", ys.getSymFileInfo)
}

func (ys *symbolsSvc) getContext(c *tcf.Call) {
	a := ys.a
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	// Function symbols ("F@<process>@<addr>@<depth>") depend only on
	// the process's modules: answered from the reply cache.
	proc := ""
	if strings.HasPrefix(id, "F@") {
		if p, _, ok := strings.Cut(id[2:], "@"); ok {
			proc = p
		}
	}
	key := replyKey{kind: kindSymbol, id: id}
	if proc != "" {
		if enc, ok := a.replies.get(proc, key); ok {
			c.Reply().Empty().RawJSON(enc).Send()
			return
		}
	}
	props, err := a.symbolContext(id)
	if err == nil && proc != "" {
		if enc := a.replies.put(proc, key, props); enc != nil {
			c.Reply().Empty().RawJSON(enc).Send()
			return
		}
	}
	c.Reply().Error(err).Data(props).Send()
}

func (ys *symbolsSvc) findByAddr(c *tcf.Call) {
	a := ys.a
	args := c.Args()
	id := args.String()
	addr := args.Uint64()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	sym, err := a.findByAddr(id, addr)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Empty().RawJSON(sym).Send()
}

// byName reads find's and findByName's arguments and looks the name up.
func (ys *symbolsSvc) byName(c *tcf.Call) (string, []string, error) {
	args := c.Args()
	id := args.String()
	_ = args.Raw() // ip: names are looked up process-wide
	name := args.String()
	if err := args.End(); err != nil {
		return "", nil, err
	}
	ids, err := ys.a.findByName(id, name)
	return name, ids, err
}

func (ys *symbolsSvc) find(c *tcf.Call) {
	_, ids, err := ys.byName(c)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).String(ids[0]).Send()
}

func (ys *symbolsSvc) findByName(c *tcf.Call) {
	_, ids, err := ys.byName(c)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(ids).Send()
}

func (ys *symbolsSvc) getSymFileInfo(c *tcf.Call) {
	a := ys.a
	args := c.Args()
	id := args.String()
	addr := args.Uint64()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ctx, err := a.scopeContext(id)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	mods, err := a.session.Modules(ctx)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	m := mods.ForAddress(addr)
	if m == nil {
		c.Reply().Error(nil).Null().Send()
		return
	}
	info := map[string]any{"Addr": m.Start, "Size": m.End - m.Start, "FileName": m.Name}
	if b, _ := a.session.Binary(m); b != nil && b.DebugFile() != "" {
		info["DebugFileName"] = b.DebugFile()
	}
	c.Reply().Error(nil).Data(info).Send()
}

func symNotFound(format string, args ...any) error {
	return tcf.Errorf(tcf.CodeSymbolNotFound, format, args...)
}

// findByAddr returns the encoded ID of the function at addr.
func (a *Agent) findByAddr(ctxID string, addr uint64) ([]byte, error) {
	ctx, err := a.scopeContext(ctxID)
	if err != nil {
		return nil, err
	}
	proc := string(ctx.Process().ID())
	if depth := a.inlineDepth(ctxID, addr); depth > 0 {
		// The pc of a frame of an inline chain, asked in that frame: its
		// own function.
		if _, frames, err := a.session.Symbolize(ctx, addr, false); err == nil && depth < len(frames) && frames[depth].Function != "" {
			return tcf.AppendJSONString(nil, functionID(proc, addr, depth)), nil
		}
	}
	key := replyKey{kind: kindFindByAddr, lo: addr}
	if enc, ok := a.replies.get(proc, key); ok {
		return enc, nil
	}
	_, frames, err := a.session.Symbolize(ctx, addr, false)
	if len(frames) == 0 || frames[0].Function == "" {
		if err == nil {
			err = symNotFound("no symbol at 0x%x", addr)
		}
		return nil, err
	}
	enc := tcf.AppendJSONString(nil, functionID(proc, addr, 0))
	a.replies.putRaw(proc, key, enc)
	return enc, nil
}

// inlineDepth returns the inline depth (0 the innermost) of the frame ctxID
// names, when it is a stack frame of an inline chain whose pc (or lookup
// pc) is addr; else 0.
func (a *Agent) inlineDepth(ctxID string, addr uint64) int {
	if !strings.HasPrefix(ctxID, "FP") {
		return 0
	}
	n, thread, err := a.ParseFrameID(ctxID)
	if err != nil {
		return 0
	}
	st, err := a.stacks.stop(thread)
	if err != nil || st == nil || n >= len(st.trace.Frames) {
		return 0
	}
	f := &st.trace.Frames[n]
	if addr != f.LookupPC && addr != f.PC {
		return 0
	}
	inner, _ := inlineChain(st.trace, n)
	return n - inner
}

// functionID is the symbol ID of the function at inline depth depth (0 the
// innermost) at run-time address addr of process proc.
func functionID(proc string, addr uint64, depth int) string {
	return "F@" + proc + "@" + strconv.FormatUint(addr, 16) + "@" + strconv.Itoa(depth)
}

func (a *Agent) findByName(ctxID, name string) ([]string, error) {
	ctx, err := a.scopeContext(ctxID)
	if err != nil {
		return nil, err
	}
	proc := ctx.Process()
	ids := a.findLocals(ctxID, name) // a frame's (or thread's) variables first (symbols_types.go)
	if addrs, err := a.session.FunctionAddresses(proc, name); err == nil {
		for _, addr := range addrs {
			ids = append(ids, functionID(string(proc.ID()), addr, 0))
		}
	}
	if vars, err := a.session.VariableAddresses(proc, name); err == nil {
		for _, addr := range vars {
			ids = append(ids, fmt.Sprintf("V@%s@%x@%s", proc.ID(), addr, name))
		}
	}
	if len(ids) == 0 {
		return nil, symNotFound("symbol %q not found", name)
	}
	return ids, nil
}

// symbolContext describes a symbol ID.
func (a *Agent) symbolContext(id string) (map[string]any, error) {
	if props, ok, err := a.dataSymbolContext(id); ok {
		return props, err
	}
	parts := strings.SplitN(id, "@", 4)
	if len(parts) != 4 {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "no symbol %q", id)
	}
	proc, err := a.lookup(parts[1])
	if err != nil {
		return nil, err
	}
	addr, err := strconv.ParseUint(parts[2], 16, 64)
	if err != nil {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "no symbol %q", id)
	}
	props := map[string]any{"ID": id, "OwnerID": string(proc.ID()), "UpdatePolicy": 0}
	switch parts[0] {
	case "V":
		props["Name"] = parts[3]
		props["Class"] = symClassReference
		props["Address"] = addr
		return props, nil
	case "F":
		depth, err := strconv.Atoi(parts[3])
		if err != nil || depth < 0 {
			return nil, tcf.Errorf(tcf.CodeInvalidContext, "no symbol %q", id)
		}
		return a.functionProps(proc, addr, depth, props)
	}
	return nil, tcf.Errorf(tcf.CodeInvalidContext, "no symbol %q", id)
}

func (a *Agent) functionProps(proc *target.Context, addr uint64, depth int, props map[string]any) (map[string]any, error) {
	m, frames, err := a.session.Symbolize(proc, addr, false)
	if depth >= len(frames) {
		if err == nil {
			err = symNotFound("no function at 0x%x", addr)
		}
		return nil, err
	}
	f := frames[depth]
	props["Name"] = f.Function
	props["Class"] = symClassFunction
	props["TypeClass"] = typeClassFunction
	if f.LinkageName != "" {
		props["LinkageName"] = f.LinkageName
	}
	start := f.Start
	if start == 0 {
		start = addr
	}
	props["Address"] = start
	if m != nil {
		if b, _ := a.session.Binary(m); b != nil {
			if scopes, _ := b.Scopes(addr - m.Bias); depth < len(scopes) {
				for _, r := range scopes[depth].Ranges {
					if addr-m.Bias >= r.Lo && addr-m.Bias < r.Hi {
						props["Size"] = r.Hi - r.Lo
					}
				}
			}
		}
	}
	return props, nil
}
