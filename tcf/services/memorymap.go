package services

import (
	"strings"
	"sync"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// memoryMap is the MemoryMap service: the file-backed mappings of a process
// (as the C agent lists them) plus the regions clients set, per process,
// forgotten when it exits.
type memoryMap struct {
	a      *Agent
	mu     sync.Mutex
	client map[string][]map[string]any
}

// RegisterMemoryMap adds the MemoryMap service.
func (a *Agent) RegisterMemoryMap() {
	mm := &memoryMap{a: a, client: map[string][]map[string]any{}}
	a.memoryMap = mm
	svc := a.srv.Service("MemoryMap")
	svc.Command("get", mm.get)
	svc.Command("set", mm.set)
}

func (mm *memoryMap) get(c *tcf.Call) {
	ctx, err := mm.a.contextArg(c)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	regions, err := ctx.MemoryMap()
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	out := []any{}
	for _, r := range regions {
		if !strings.HasPrefix(r.FileName, "/") {
			continue
		}
		out = append(out, memoryRegion(r))
	}
	mm.mu.Lock()
	for _, r := range mm.client[string(ctx.Process().ID())] {
		out = append(out, r) // as the client set them
	}
	mm.mu.Unlock()
	c.Reply().Error(nil).Data(out).Send()
}

func (mm *memoryMap) set(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	var regions []map[string]any
	args.JSON(&regions)
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	ctx, err := mm.a.lookup(id)
	if err != nil {
		c.ReplyError(err)
		return
	}
	pid := string(ctx.Process().ID())
	mm.mu.Lock()
	mm.client[pid] = regions
	mm.mu.Unlock()
	c.ReplyError(nil)
	mm.a.emit("MemoryMap", "changed", pid)
}

// memoryRegion is one mapping as TCF MemoryMap properties.
func memoryRegion(r target.MemoryRegion) regionProps {
	flags := 0
	if r.Perm&target.PermRead != 0 {
		flags |= 1
	}
	if r.Perm&target.PermWrite != 0 {
		flags |= 2
	}
	if r.Perm&target.PermExec != 0 {
		flags |= 4
	}
	return regionProps{Addr: r.Addr, Size: r.Size, Offs: r.Offset, Flags: flags,
		FileName: r.FileName, BSS: r.BSS, SectionName: r.SectionName}
}

// regionProps are one mapping's MemoryMap properties, in the order the
// replies have always had them (the keys' order).
type regionProps struct {
	Addr        uint64 `json:"Addr"`
	BSS         bool   `json:"BSS,omitempty"`
	FileName    string `json:"FileName"`
	Flags       int    `json:"Flags"`
	Offs        uint64 `json:"Offs"`
	SectionName string `json:"SectionName,omitempty"`
	Size        uint64 `json:"Size"`
}

// event sends MemoryMap's changed event when a process's mappings changed
// (the agent dropped the replies cached for the old ones), and forgets what
// clients set for a process that exited.
func (mm *memoryMap) event(e target.Event) {
	id := string(e.Context.ID())
	switch {
	case e.Kind == target.EventMemoryMapChanged:
		mm.a.emit("MemoryMap", "changed", id)
	case e.Kind == target.EventExited && e.Context.IsProcess():
		mm.mu.Lock()
		delete(mm.client, id)
		mm.mu.Unlock()
	}
}
