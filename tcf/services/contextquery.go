package services

import (
	"path"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// ContextQuery selects contexts with a path of filters, one per level of the
// context tree (process, then thread): "pid=123/*" is every thread of process
// 123; "**" matches any number of levels; a part is either "*", a plain name
// matched against Name, or comma-separated attr=value filters whose values may
// use shell wildcards. A query that does not start with "/" may match at any
// depth.

// queryAttrs are the attributes a query can filter on.
var queryAttrs = []string{"ID", "Name", "KernelName", "pid", "tid", "ProcessID", "ParentID",
	"CreatorID", "HasState", "IsContainer", "AncestorID", "AncestorName"}

// RegisterContextQuery adds the ContextQuery service.
func (a *Agent) RegisterContextQuery() {
	svc := a.srv.Service("ContextQuery")
	svc.Command("getAttrNames", func(c *tcf.Call) {
		if err := c.Args().End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		c.Reply().Error(nil).Data(queryAttrs).Send()
	})
	svc.Command("query", func(c *tcf.Call) {
		args := c.Args()
		q := args.String()
		if err := args.End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		c.Reply().Error(nil).Data(a.Query(q)).Send()
	})
}

// Query returns the IDs of the contexts that match q.
func (a *Agent) Query(q string) []string {
	absolute := strings.HasPrefix(q, "/")
	parts := strings.Split(strings.Trim(q, "/"), "/")
	if q == "" || q == "/" {
		parts = nil
	}
	if !absolute && len(parts) > 0 {
		parts = append([]string{"**"}, parts...)
	}
	out := []string{}
	for _, p := range a.target.Processes() {
		if matchPath(parts, []*target.Context{p}) {
			out = append(out, string(p.ID()))
		}
		for _, t := range p.Children() {
			if matchPath(parts, []*target.Context{p, t}) {
				out = append(out, string(t.ID()))
			}
		}
	}
	return out
}

// matchPath matches query parts against a context's ancestry, root first.
func matchPath(parts []string, chain []*target.Context) bool {
	if len(parts) == 0 {
		return len(chain) == 0
	}
	if parts[0] == "**" {
		for i := 0; i <= len(chain); i++ {
			if matchPath(parts[1:], chain[i:]) {
				return true
			}
		}
		return false
	}
	if len(chain) == 0 || !matchPart(parts[0], chain[0]) {
		return false
	}
	return matchPath(parts[1:], chain[1:])
}

func matchPart(part string, c *target.Context) bool {
	if part == "*" {
		return true
	}
	for _, f := range strings.Split(part, ",") {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			k, v = "Name", f
		}
		v = strings.Trim(v, `"`)
		got, has := queryAttr(c, k)
		if !has {
			return false
		}
		if m, err := path.Match(v, got); err != nil || !m {
			return false
		}
	}
	return true
}

func queryAttr(c *target.Context, k string) (string, bool) {
	switch k {
	case "ID":
		return string(c.ID()), true
	case "Name", "KernelName":
		return c.Name(), true
	case "pid":
		return strconv.Itoa(c.PID()), true
	case "tid":
		return strconv.Itoa(c.TID()), !c.IsProcess()
	case "ProcessID":
		return string(c.Process().ID()), true
	case "ParentID":
		if c.IsProcess() {
			return "", false
		}
		return string(c.Parent().ID()), true
	case "CreatorID":
		if c.Creator() == nil {
			return "", false
		}
		return string(c.Creator().ID()), true
	case "HasState":
		return strconv.FormatBool(!c.IsProcess()), true
	case "IsContainer":
		return strconv.FormatBool(c.IsProcess()), true
	case "AncestorID":
		return string(c.Process().ID()), true
	case "AncestorName":
		return c.Process().Name(), true
	}
	return "", false
}
