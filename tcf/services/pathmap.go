package services

import (
	"strings"
	"sync"

	"github.com/sondedbg/sonde/tcf"
)

// pathMap is the PathMap service: clients tell the agent how their source
// paths map onto the target's, and breakpoints by file use it. Eclipse sets
// it at every launch and ends the session if that fails.
type pathMap struct {
	a     *Agent
	mu    sync.Mutex
	rules []map[string]any
}

// RegisterPathMap adds the PathMap service.
func (a *Agent) RegisterPathMap() {
	pm := &pathMap{a: a}
	a.pathMap = pm
	a.breaks.paths = pm
	svc := a.srv.Service("PathMap")
	svc.Command("get", pm.get)
	svc.Command("set", pm.set)
}

func (pm *pathMap) get(c *tcf.Call) {
	if err := c.Args().End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	pm.mu.Lock()
	rules := append([]map[string]any{}, pm.rules...)
	pm.mu.Unlock()
	c.Reply().Error(nil).Data(rules).Send()
}

func (pm *pathMap) set(c *tcf.Call) {
	args := c.Args()
	var rules []map[string]any
	args.JSON(&rules)
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	pm.mu.Lock()
	pm.rules = rules
	pm.mu.Unlock()
	c.ReplyError(nil)
	pm.a.emit("PathMap", "changed")
}

// MapPath translates a client's source path to the target's with the PathMap
// rules (the first rule whose Source is a prefix wins); unmatched paths are
// returned as they are, as they are all when the service is not offered.
func (a *Agent) MapPath(path string) string { return a.pathMap.mapPath(path) }

// mapPath is MapPath with pm's rules (none when pm is nil: the service is
// not offered).
func (pm *pathMap) mapPath(path string) string {
	if pm == nil {
		return path
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	for _, r := range pm.rules {
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
