package services

import (
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// ContextQuery selects contexts with a path of filters, one per level of the
// context tree (process, then thread), in the spec's syntax:
//
//	query      = [ "/" ], { part, "/" }, part ;
//	part       = string | "*" | "**" | properties ;
//	properties = property, { ",", property } ;
//	property   = string, "=", value ;
//	value      = string | number ;  string = quoted string | symbol ;
//
// "pid=123/*" is every thread of process 123, "**" matches any number of
// levels (none included), a plain string matches Name, and a query that does
// not start with "/" may start at any depth. As in the C agent, values
// compare exactly, attribute names ignore case, a context the query does not
// name an attribute of does not match, and a syntax error is an error report
// (with an empty list). The empty query matches every context.

// queryAttrs are the attributes a query can filter on (the C agent's, plus
// IsContainer).
var queryAttrs = []string{"KernelName", "tid", "pid", "ProcessID", "CreatorID", "AncestorName",
	"AncestorID", "ParentName", "ParentID", "HasState", "IsContainer", "Name", "ID"}

// contextQuerySvc is the ContextQuery service's commands.
type contextQuerySvc struct {
	a *Agent
}

// RegisterContextQuery adds the ContextQuery service.
func (a *Agent) RegisterContextQuery() {
	cq := &contextQuerySvc{a: a}
	svc := a.srv.Service("ContextQuery")
	svc.Command("getAttrNames", cq.getAttrNames)
	svc.Command("query", cq.query)
}

func (cq *contextQuerySvc) getAttrNames(c *tcf.Call) {
	if err := c.Args().End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(queryAttrs).Send()
}

func (cq *contextQuerySvc) query(c *tcf.Call) {
	a := cq.a
	args := c.Args()
	q := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ids, err := a.QueryContexts(q)
	if err != nil {
		c.Reply().Error(err).Data([]string{}).Send()
		return
	}
	c.Reply().Error(nil).Data(ids).Send()
}

// Query returns the IDs of the contexts that match q (none when q is not a
// valid query).
func (a *Agent) Query(q string) []string {
	ids, _ := a.QueryContexts(q)
	return ids
}

// QueryContexts returns the IDs of the contexts that match q, processes each
// followed by their threads.
func (a *Agent) QueryContexts(q string) ([]string, error) { return queryContexts(a.target, q) }

// queryContexts returns the IDs of t's contexts that match q, processes
// each followed by their threads.
func queryContexts(t *target.Target, q string) ([]string, error) {
	cq, err := ParseContextQuery(q)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, p := range t.Processes() {
		if cq.Match([]*target.Context{p}) {
			out = append(out, string(p.ID()))
		}
		for _, t := range p.Children() {
			if cq.Match([]*target.Context{p, t}) {
				out = append(out, string(t.ID()))
			}
		}
	}
	return out, nil
}

// ContextQuery is a parsed query.
type ContextQuery struct {
	absolute bool
	parts    []queryPart
}

// queryPart is one level: "*", "**", or properties that must all match (a
// property without a name matches Name).
type queryPart struct {
	wild  string // "*" or "**"; "" for properties
	props []queryProp
}

type queryProp struct {
	name, value string // name "" means Name
}

// QuerySyntaxError is a malformed context query.
type QuerySyntaxError struct {
	Query  string
	Offset int
	Msg    string
}

func (e *QuerySyntaxError) Error() string {
	return "invalid context query syntax at offset " + strconv.Itoa(e.Offset) + " of " + strconv.Quote(e.Query) + ": " + e.Msg
}

// TCFCode is OTHER, as the C agent reports query syntax errors.
func (e *QuerySyntaxError) TCFCode() int { return tcf.CodeOther }

// maxQueryParts bounds the path length (the tree here is two levels deep;
// "**" parts make matching recursive).
const maxQueryParts = 64

// ParseContextQuery parses a query; the empty query matches everything.
func ParseContextQuery(q string) (*ContextQuery, error) {
	cq := &ContextQuery{}
	if q == "" {
		return cq, nil
	}
	p := &queryParser{q: q}
	if q[0] == '/' {
		cq.absolute = true
		p.pos++
	}
	for {
		if p.pos >= len(q) || strings.IndexByte("/=,", q[p.pos]) >= 0 {
			return nil, p.fail("missing context name, property or wildcard")
		}
		part, err := p.part()
		if err != nil {
			return nil, err
		}
		cq.parts = append(cq.parts, part)
		if len(cq.parts) > maxQueryParts {
			return nil, p.fail("more than " + strconv.Itoa(maxQueryParts) + " parts")
		}
		if p.pos >= len(q) {
			return cq, nil
		}
		p.pos++ // the '/' part() stopped at
	}
}

type queryParser struct {
	q   string
	pos int
}

func (p *queryParser) fail(msg string) error {
	return &QuerySyntaxError{Query: p.q, Offset: p.pos, Msg: msg}
}

// part parses up to the next top-level '/' or the end.
func (p *queryParser) part() (queryPart, error) {
	if p.q[p.pos] == '*' {
		w := "*"
		p.pos++
		if p.pos < len(p.q) && p.q[p.pos] == '*' {
			w = "**"
			p.pos++
		}
		if p.pos < len(p.q) && p.q[p.pos] != '/' {
			return queryPart{}, p.fail("* and ** are the only valid wildcards")
		}
		return queryPart{wild: w}, nil
	}
	var part queryPart
	for {
		name, err := p.str(false)
		if err != nil {
			return part, err
		}
		prop := queryProp{value: name}
		if p.pos < len(p.q) && p.q[p.pos] == '=' {
			p.pos++
			if p.pos >= len(p.q) || strings.IndexByte("/=,", p.q[p.pos]) >= 0 {
				return part, p.fail("missing value")
			}
			v, err := p.str(true)
			if err != nil {
				return part, err
			}
			if p.pos < len(p.q) && p.q[p.pos] == '=' {
				return part, p.fail("a property takes one value")
			}
			prop = queryProp{name: name, value: v}
		}
		part.props = append(part.props, prop)
		if p.pos >= len(p.q) || p.q[p.pos] == '/' {
			return part, nil
		}
		// p.str stops only at '/', '=', ',' or the end.
		p.pos++ // ','
		if p.pos >= len(p.q) || strings.IndexByte("/=,", p.q[p.pos]) >= 0 {
			return part, p.fail("missing property")
		}
	}
}

// str parses a quoted string, a symbol, or (for values) a number.
func (p *queryParser) str(value bool) (string, error) {
	q := p.q
	if q[p.pos] == '"' {
		var b strings.Builder
		i := p.pos + 1
		for ; i < len(q) && q[i] != '"'; i++ {
			if q[i] == '\\' {
				i++
				if i >= len(q) || q[i] != '\\' && q[i] != '"' {
					p.pos = i
					return "", p.fail(`\" and \\ are the only escapes`)
				}
			}
			b.WriteByte(q[i])
		}
		if i >= len(q) {
			p.pos = i
			return "", p.fail("missing closing quote")
		}
		p.pos = i + 1
		if p.pos < len(q) && strings.IndexByte("/=,", q[p.pos]) < 0 {
			return "", p.fail("unexpected character after a quoted string")
		}
		return b.String(), nil
	}
	start := p.pos
	digits := value && q[p.pos] >= '0' && q[p.pos] <= '9'
	for p.pos < len(q) {
		c := q[p.pos]
		if c >= '0' && c <= '9' || !digits && (c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			p.pos++
			continue
		}
		break
	}
	if p.pos < len(q) && strings.IndexByte("/=,", q[p.pos]) < 0 {
		if digits {
			return "", p.fail("expecting a digit, ',' or '/' after a number")
		}
		return "", p.fail("unquoted strings must only contain letters, digits or '_'")
	}
	return q[start:p.pos], nil
}

// Match reports whether the last context of chain (its ancestry, root
// first) matches the query.
func (cq *ContextQuery) Match(chain []*target.Context) bool {
	if len(cq.parts) == 0 {
		return !cq.absolute
	}
	parts := cq.parts
	if !cq.absolute && parts[0].wild != "**" {
		parts = append([]queryPart{{wild: "**"}}, parts...)
	}
	return matchParts(parts, chain)
}

// matchParts matches query parts against a context's ancestry, root first.
func matchParts(parts []queryPart, chain []*target.Context) bool {
	if len(parts) == 0 {
		return len(chain) == 0
	}
	if parts[0].wild == "**" {
		for i := 0; i <= len(chain); i++ {
			if matchParts(parts[1:], chain[i:]) {
				return true
			}
		}
		return false
	}
	if len(chain) == 0 || !parts[0].matches(chain[0]) {
		return false
	}
	return matchParts(parts[1:], chain[1:])
}

func (p queryPart) matches(c *target.Context) bool {
	if p.wild == "*" {
		return true
	}
	for _, prop := range p.props {
		name := prop.name
		if name == "" {
			name = "Name"
		}
		got, has := queryAttr(c, name)
		if !has || got != prop.value {
			return false
		}
	}
	return true
}

// queryAttr is the value of an attribute of c, compared as text.
func queryAttr(c *target.Context, k string) (string, bool) {
	switch strings.ToLower(k) {
	case "id":
		return string(c.ID()), true
	case "name", "kernelname":
		return c.Name(), true
	case "pid":
		return strconv.Itoa(c.PID()), true
	case "tid":
		return strconv.Itoa(c.TID()), !c.IsProcess()
	case "processid":
		return string(c.Process().ID()), true
	case "parentid":
		if c.IsProcess() {
			return "", false
		}
		return string(c.Parent().ID()), true
	case "parentname":
		if c.IsProcess() {
			return "", false
		}
		return c.Parent().Name(), true
	case "creatorid":
		if c.Creator() == nil {
			return "", false
		}
		return string(c.Creator().ID()), true
	case "hasstate":
		return strconv.FormatBool(!c.IsProcess()), true
	case "iscontainer":
		return strconv.FormatBool(c.IsProcess()), true
	case "ancestorid":
		// Threads have one ancestor, their process; processes none.
		if c.IsProcess() {
			return "", false
		}
		return string(c.Process().ID()), true
	case "ancestorname":
		if c.IsProcess() {
			return "", false
		}
		return c.Process().Name(), true
	}
	return "", false
}
