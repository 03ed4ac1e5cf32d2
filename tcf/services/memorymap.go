package services

import (
	"strings"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// RegisterMemoryMap adds the MemoryMap service: the file-backed mappings of a
// process (as the C agent lists them) plus what clients set.
func (a *Agent) RegisterMemoryMap() {
	svc := a.srv.Service("MemoryMap")
	svc.Command("get", func(c *tcf.Call) {
		ctx, err := a.contextArg(c)
		if err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		regions, err := ctx.MemoryMap()
		if err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		out := []map[string]any{}
		for _, r := range regions {
			if !strings.HasPrefix(r.FileName, "/") {
				continue
			}
			out = append(out, memoryRegion(r))
		}
		a.mu.Lock()
		out = append(out, a.clientMaps[string(ctx.Process().ID())]...)
		a.mu.Unlock()
		c.Reply().Error(nil).Data(out).Send()
	})
	svc.Command("set", func(c *tcf.Call) {
		args := c.Args()
		id := args.String()
		var regions []map[string]any
		args.JSON(&regions)
		if err := args.End(); err != nil {
			c.ReplyError(err)
			return
		}
		ctx, err := a.lookup(id)
		if err != nil {
			c.ReplyError(err)
			return
		}
		pid := string(ctx.Process().ID())
		a.mu.Lock()
		a.clientMaps[pid] = regions
		a.mu.Unlock()
		c.ReplyError(nil)
		a.emit("MemoryMap", "changed", pid)
	})
}

// memoryRegion is one mapping as TCF MemoryMap properties.
func memoryRegion(r target.MemoryRegion) map[string]any {
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
	m := map[string]any{
		"Addr":     r.Addr,
		"Size":     r.Size,
		"Offs":     r.Offset,
		"Flags":    flags,
		"FileName": r.FileName,
	}
	if r.BSS {
		m["BSS"] = true
	}
	if r.SectionName != "" {
		m["SectionName"] = r.SectionName
	}
	return m
}

// memoryMapEvent sends MemoryMap's changed event when a process's mappings
// changed, after dropping the replies cached for the old ones.
func (a *Agent) memoryMapEvent(e target.Event) {
	if e.Kind != target.EventMemoryMapChanged {
		return
	}
	id := string(e.Context.ID())
	a.replies.drop(id)
	a.emit("MemoryMap", "changed", id)
}

// forgetClientMaps drops the MemoryMap.set entries of a process that is gone.
func (a *Agent) forgetClientMaps(proc *target.Context) {
	a.mu.Lock()
	delete(a.clientMaps, string(proc.ID()))
	a.mu.Unlock()
}
