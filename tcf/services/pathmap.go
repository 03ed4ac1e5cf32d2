package services

import (
	"strings"

	"github.com/sondedbg/sonde/tcf"
)

// RegisterPathMap adds the PathMap service: clients tell the agent how their
// source paths map onto the target's, and breakpoints by file use it. Eclipse
// sets it at every launch and ends the session if that fails.
func (a *Agent) RegisterPathMap() {
	svc := a.srv.Service("PathMap")
	svc.Command("get", func(c *tcf.Call) {
		if err := c.Args().End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		a.mu.Lock()
		rules := append([]map[string]any{}, a.pathMap...)
		a.mu.Unlock()
		c.Reply().Error(nil).Data(rules).Send()
	})
	svc.Command("set", func(c *tcf.Call) {
		args := c.Args()
		var rules []map[string]any
		args.JSON(&rules)
		if err := args.End(); err != nil {
			c.ReplyError(err)
			return
		}
		a.mu.Lock()
		a.pathMap = rules
		a.mu.Unlock()
		c.ReplyError(nil)
		a.emit("PathMap", "changed")
	})
}

// MapPath translates a client's source path to the target's with the PathMap
// rules (the first rule whose Source is a prefix wins); unmatched paths are
// returned as they are.
func (a *Agent) MapPath(path string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.pathMap {
		src, _ := r["Source"].(string)
		dst, _ := r["Destination"].(string)
		if proto, _ := r["Protocol"].(string); proto != "" && proto != "file" {
			continue
		}
		if src != "" && strings.HasPrefix(path, src) {
			return dst + strings.TrimPrefix(path, src)
		}
	}
	return path
}
