package dap

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
)

// Breakpoints the client sets are planted as the target's internal
// breakpoints with a hit handler: the condition, the hit condition and the
// log message are decided in the handler, where the thread stopped, so a
// hit that does not show costs no round trip to the client (and no stopped
// event). A breakpoint whose location is in no loaded code is unverified;
// it is planted, and reported verified with a breakpoint event, when a
// library that has it loads.

type bpKind int

const (
	kindSource bpKind = iota
	kindFunction
	kindInstruction
	kindData
	kindException
)

// stopReasonOf is the stopped event's reason for a kind of breakpoint.
var stopReasonOf = [...]string{
	kindSource:      "breakpoint",
	kindFunction:    "function breakpoint",
	kindInstruction: "instruction breakpoint",
	kindData:        "data breakpoint",
	kindException:   "exception",
}

type clientBreakpoint struct {
	id      int
	kind    bpKind
	path    string // source: the file as the client named it
	line    int    // source: requested line
	name    string // function name, instruction reference, data id or exception filter
	addr    uint64 // instruction and data breakpoints
	size    int    // data
	access  target.Access
	cond    string
	hitCond string
	logMsg  string

	table *breakpointTable
	// Guarded by table.mu: what is planted and what the client is told.
	hits     int64
	removed  bool // replaced by the client: nothing may be planted for it
	planted  []*target.Breakpoint
	verified bool
	message  string
	at       string // resolved file
	atLine   int    // resolved line
}

type breakpointTable struct {
	mu        sync.Mutex
	next      int
	sources   map[string][]*clientBreakpoint
	functions []*clientBreakpoint
	insns     []*clientBreakpoint
	data      []*clientBreakpoint
	excepts   []*clientBreakpoint
	byPlanted map[*target.Breakpoint]*clientBreakpoint
}

// swapper is replaceBreakpoints' swap for a set kept in one slice of the
// table.
func (t *breakpointTable) swapper(set *[]*clientBreakpoint) func([]*clientBreakpoint) []*clientBreakpoint {
	return func(list []*clientBreakpoint) []*clientBreakpoint {
		old := *set
		*set = list
		return old
	}
}

func (t *breakpointTable) newBP(kind bpKind) *clientBreakpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	return &clientBreakpoint{id: t.next, kind: kind, table: t}
}

// all returns every client breakpoint.
func (t *breakpointTable) all() []*clientBreakpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*clientBreakpoint
	keys := make([]string, 0, len(t.sources))
	for k := range t.sources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, t.sources[k]...)
	}
	out = append(out, t.functions...)
	out = append(out, t.insns...)
	out = append(out, t.data...)
	out = append(out, t.excepts...)
	return out
}

// forget drops what was planted in a target that is gone.
func (t *breakpointTable) forget(d *debuggee) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for tb, cb := range t.byPlanted {
		if tb.Process.Target() == d.tgt {
			delete(t.byPlanted, tb)
			cb.planted = nil
		}
	}
}

// replantAll plants every breakpoint in a new debuggee (launch, attach,
// restart).
func (t *breakpointTable) replantAll(d *debuggee) {
	for _, cb := range t.all() {
		if cb.kind == kindData {
			continue // addresses of another run
		}
		t.mu.Lock()
		cb.planted, cb.verified = nil, false
		t.mu.Unlock()
		d.plant(cb)
	}
}

// stopReason names a breakpoint stop for the client: the reason of the
// first client breakpoint hit, and the ids of all of them.
func (t *breakpointTable) stopReason(r *target.SuspendReason) (string, []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	reason := ""
	var ids []int
	for _, tb := range r.Breakpoints {
		cb := t.byPlanted[tb]
		if cb == nil {
			continue
		}
		if reason == "" {
			reason = stopReasonOf[cb.kind]
		}
		ids = append(ids, cb.id)
	}
	if reason == "" {
		reason = "breakpoint"
		if r.Kind == target.ReasonWatchpoint {
			reason = "data breakpoint"
		}
	}
	return reason, ids
}

// plant resolves a breakpoint's location in the debuggee and plants it.
// It may run on the handler goroutine or, for a library load, where the
// target reports it (the tracer thread): the table's lock is never held
// across a call into the target, and a breakpoint the client removed
// meanwhile has what was just planted for it removed again.
func (d *debuggee) plant(cb *clientBreakpoint) {
	if d == nil {
		return
	}
	t := &d.s.bps
	if d.proc == nil || d.core {
		if d.core {
			t.mu.Lock()
			cb.message = "a core file cannot run: breakpoints do not apply"
			t.mu.Unlock()
		}
		return
	}
	addrs, err := d.resolve(cb)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	var planted []*target.Breakpoint
	for _, a := range addrs {
		spec := target.BreakpointSpec{Addr: a, Internal: true, OnHit: d.onHit, Function: cb.kind == kindFunction}
		if cb.kind == kindData {
			spec = target.BreakpointSpec{Addr: a, Kind: target.Watchpoint, Size: cb.size, Access: cb.access}
		}
		tb, err := d.tgt.SetBreakpoint(d.proc, spec)
		if err != nil {
			msg = err.Error()
			continue
		}
		planted = append(planted, tb)
	}
	var at string
	var atLine int
	if len(planted) > 0 && (cb.kind == kindSource || cb.kind == kindFunction) {
		if _, frames, err := d.sess.Symbolize(d.proc, planted[0].Spec.Addr, false); err == nil && len(frames) > 0 {
			at, atLine = frames[0].File, frames[0].Line
		}
	}
	t.mu.Lock()
	if cb.removed {
		t.mu.Unlock()
		for _, tb := range planted {
			d.tgt.RemoveBreakpoint(tb)
		}
		return
	}
	if t.byPlanted == nil {
		t.byPlanted = map[*target.Breakpoint]*clientBreakpoint{}
	}
	for _, tb := range planted {
		t.byPlanted[tb] = cb
	}
	cb.planted = append(cb.planted, planted...)
	cb.verified = len(cb.planted) > 0
	switch {
	case cb.verified:
		cb.message = ""
		if at != "" {
			cb.at, cb.atLine = at, atLine
		}
	case msg != "":
		cb.message = msg
	case cb.message == "":
		cb.message = "no code found here in the loaded modules (yet)"
	}
	t.mu.Unlock()
}

// resolve finds a breakpoint's addresses.
func (d *debuggee) resolve(cb *clientBreakpoint) ([]uint64, error) {
	switch cb.kind {
	case kindSource:
		addrs, err := d.resolveLine(cb)
		return d.pastEntries(addrs), err
	case kindFunction:
		addrs := d.inExecutable(func(b *symbols.Binary) []uint64 {
			insts, _ := b.LookupFunction(cb.name)
			out := make([]uint64, 0, len(insts))
			for _, in := range insts {
				out = append(out, in.Entry)
			}
			return out
		})
		var err error
		if len(addrs) == 0 {
			addrs, err = d.sess.FunctionAddresses(d.proc, cb.name)
		}
		for i, a := range addrs {
			addrs[i] = d.sess.AfterPrologue(d.proc, a)
		}
		return addrs, err
	case kindInstruction, kindData:
		return []uint64{cb.addr}, nil
	case kindException:
		fn := exceptionFunctions[cb.name]
		if fn == "" {
			return nil, nil
		}
		addrs, err := d.sess.SymbolAddresses(d.proc, fn)
		if len(addrs) == 0 && cb.name == "rust_panic" {
			// Rust mangles it (std::panicking::rust_panic, or
			// __rustc::rust_panic in newer toolchains): its DWARF name.
			addrs, err = d.sess.FunctionAddresses(d.proc, fn)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("%s is not in the loaded modules (yet)", fn)
		}
		return addrs, err
	}
	return nil, nil
}

// resolveLine finds the addresses of a source line: in the executable
// first, then in every module, then by the file's name alone.
func (d *debuggee) resolveLine(cb *clientBreakpoint) ([]uint64, error) {
	if addrs := d.inExecutable(func(b *symbols.Binary) []uint64 {
		locs, _ := b.LookupLine(cb.path, cb.line)
		out := make([]uint64, 0, len(locs))
		for _, l := range locs {
			out = append(out, l.Addr)
		}
		return out
	}); len(addrs) > 0 {
		return addrs, nil
	}
	addrs, err := d.sess.LineAddresses(d.proc, cb.path, cb.line, 0)
	if len(addrs) == 0 {
		// The client's path may differ from the one the compiler
		// recorded (a symlink, a moved checkout): try the file name.
		if a2, err2 := d.sess.LineAddresses(d.proc, filepath.Base(cb.path), cb.line, 0); len(a2) > 0 {
			return a2, err2
		}
	}
	return addrs, err
}

// pastEntries moves the addresses that are a function's entry past its
// prologue, as gdb and lldb do for a breakpoint on a function's opening line
// (the line a user clicks on most): stopped at the entry, the frame is not
// set up and the arguments read garbage.
func (d *debuggee) pastEntries(addrs []uint64) []uint64 {
	for i, a := range addrs {
		if _, lo, _, err := d.sess.FunctionBounds(d.proc, a); err == nil && lo == a {
			addrs[i] = d.sess.AfterPrologue(d.proc, a)
		}
	}
	return addrs
}

// inExecutable runs a lookup in the main executable's symbols only and
// returns its addresses run-time: a program's own source lines and
// functions are what breakpoints are mostly for, and looking in the
// executable first spares reading the debug information of every library
// (the dynamic linker's alone took 150 ms) before the program starts.
func (d *debuggee) inExecutable(lookup func(b *symbols.Binary) []uint64) []uint64 {
	mods, err := d.sess.Modules(d.proc)
	if err != nil {
		return nil
	}
	for _, m := range mods {
		if !m.Main {
			continue
		}
		b, _ := d.sess.Binary(m)
		if b == nil {
			return nil
		}
		addrs := lookup(b)
		for i := range addrs {
			addrs[i] += m.Bias
		}
		return addrs
	}
	return nil
}

// unplant removes a breakpoint from the target, for good.
func (d *debuggee) unplant(cb *clientBreakpoint) {
	var t *breakpointTable
	if d != nil {
		t = &d.s.bps
	} else {
		t = cb.table
	}
	t.mu.Lock()
	cb.removed = true
	list := cb.planted
	cb.planted = nil
	for _, tb := range list {
		delete(t.byPlanted, tb)
	}
	t.mu.Unlock()
	for _, tb := range list {
		if d != nil && tb.Process.Target() == d.tgt {
			d.tgt.RemoveBreakpoint(tb)
		}
	}
}

// view is the protocol's view of a client breakpoint.
func (t *breakpointTable) view(cb *clientBreakpoint) godap.Breakpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := godap.Breakpoint{Id: cb.id, Verified: cb.verified, Message: cb.message}
	switch cb.kind {
	case kindSource:
		b.Source = sourceOf(cb.path)
		b.Line = cb.line
		if cb.atLine > 0 {
			b.Line = cb.atLine
		}
	case kindFunction:
		if cb.at != "" {
			b.Source = sourceOf(cb.at)
			b.Line = cb.atLine
		}
	}
	if len(cb.planted) > 0 {
		b.InstructionReference = hexAddr(cb.planted[0].Spec.Addr)
	}
	return b
}

// onHit decides, where the thread stopped, whether a hit is shown.
func (d *debuggee) onHit(th *target.Context, tb *target.Breakpoint) (reason *target.SuspendReason) {
	defer func() {
		if p := recover(); p != nil {
			d.s.recoverIn2("breakpoint hit", p)
			reason = &target.SuspendReason{Kind: target.ReasonBreakpoint, Breakpoints: []*target.Breakpoint{tb}, Message: fmt.Sprint("internal error: ", p)}
		}
	}()
	t := &d.s.bps
	t.mu.Lock()
	cb := t.byPlanted[tb]
	t.mu.Unlock()
	if cb == nil {
		return nil
	}
	var condErr string
	if strings.TrimSpace(cb.cond) != "" {
		fe, err := d.topEnv(th)
		var ok bool
		if err == nil {
			ok, err = expr.Condition(cb.cond, fe.env)
		}
		if err != nil {
			condErr = fmt.Sprintf("breakpoint condition %q: %v", cb.cond, userMessage(err))
		} else if !ok {
			return nil
		}
	}
	t.mu.Lock()
	cb.hits++
	hits := cb.hits
	t.mu.Unlock()
	if condErr == "" && !hitConditionMet(cb.hitCond, hits) {
		return nil
	}
	if cb.logMsg != "" && condErr == "" {
		d.s.output("console", d.logMessage(th, cb.logMsg)+"\n")
		return nil
	}
	return &target.SuspendReason{Kind: target.ReasonBreakpoint, Breakpoints: []*target.Breakpoint{tb}, Message: condErr}
}

// topEnv is the environment of a stopped thread's innermost frame, built
// from a walk without symbols (breakpoint conditions and log messages need
// none of the callers').
func (d *debuggee) topEnv(th *target.Context) (*frameEnv, error) {
	st, err := d.sess.Stack(th, session.StackOptions{NoSymbols: true})
	if err != nil {
		return nil, err
	}
	f := st.Frame(0)
	if f == nil {
		return nil, fmt.Errorf("no frame")
	}
	return d.frameEnvOf(th, f, 0), nil
}

// hitConditionMet applies a hit condition to the hit count: "N" (and
// ">= N") stops from the Nth hit on, as lldb-dap's ignore count does;
// "== N", "> N", "< N", "<= N" and "% N" compare as written.
func hitConditionMet(cond string, hits int64) bool {
	c := strings.TrimSpace(cond)
	if c == "" {
		return true
	}
	op := ""
	for _, o := range []string{">=", "<=", "==", ">", "<", "%", "="} {
		if strings.HasPrefix(c, o) {
			op, c = o, strings.TrimSpace(c[len(o):])
			break
		}
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil {
		return true // unparsable: never silently swallow hits
	}
	switch op {
	case "", ">=":
		return hits >= n
	case "==", "=":
		return hits == n
	case ">":
		return hits > n
	case "<":
		return hits < n
	case "<=":
		return hits <= n
	case "%":
		return n > 0 && hits%n == 0
	}
	return true
}

// logMessage expands the {expression} parts of a log point's message in
// the thread's top frame ("{{" and "}}" are literal braces).
func (d *debuggee) logMessage(th *target.Context, msg string) string {
	var b strings.Builder
	var fe *frameEnv
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '{' && i+1 < len(msg) && msg[i+1] == '{' || c == '}' && i+1 < len(msg) && msg[i+1] == '}' {
			b.WriteByte(c)
			i++
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(msg[i:], '}')
		if end < 0 {
			b.WriteString(msg[i:])
			break
		}
		text := msg[i+1 : i+end]
		i += end
		if fe == nil {
			var err error
			if fe, err = d.topEnv(th); err != nil {
				b.WriteString("<" + userMessage(err) + ">")
				continue
			}
		}
		res, err := expr.Eval(text, fe.env)
		if err != nil {
			b.WriteString("<" + userMessage(err) + ">")
			continue
		}
		b.WriteString(d.s.formatReferent(fe, res, false))
	}
	return b.String()
}

// modulesChanged runs when a library loads or unloads, with the thread
// that did it stopped: unverified breakpoints are tried again, and the
// client told about those that now have code.
func (d *debuggee) modulesChanged(proc *target.Context) {
	defer d.s.recoverIn("library load")
	if proc != d.proc {
		return
	}
	t := &d.s.bps
	for _, cb := range t.all() {
		t.mu.Lock()
		skip := cb.verified || cb.removed || cb.kind == kindData
		t.mu.Unlock()
		if skip {
			continue
		}
		d.plant(cb)
		if b := t.view(cb); b.Verified {
			d.s.sendEvent("breakpoint", godap.BreakpointEventBody{Reason: "changed", Breakpoint: b})
		}
	}
	d.moduleEvents()
}

func (s *Server) setBreakpoints(r *request) (any, error) {
	var a godap.SetBreakpointsArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	path := a.Source.Path
	if path == "" {
		path = a.Source.Name
	}
	if path == "" {
		return nil, errorf("setBreakpoints: source has no path")
	}
	want := a.Breakpoints
	if len(want) == 0 && len(a.Lines) > 0 {
		for _, l := range a.Lines {
			want = append(want, godap.SourceBreakpoint{Line: l})
		}
	}
	d, _ := s.current()
	swap := func(list []*clientBreakpoint) []*clientBreakpoint {
		if s.bps.sources == nil {
			s.bps.sources = map[string][]*clientBreakpoint{}
		}
		old := s.bps.sources[path]
		if list == nil {
			delete(s.bps.sources, path)
		} else {
			s.bps.sources[path] = list
		}
		return old
	}
	out := s.replaceBreakpoints(d, swap, len(want), func(i int) *clientBreakpoint {
		w := want[i]
		cb := s.bps.newBP(kindSource)
		cb.path, cb.line, cb.cond, cb.hitCond, cb.logMsg = path, w.Line, w.Condition, w.HitCondition, w.LogMessage
		if w.Line <= 0 {
			cb.message = fmt.Sprintf("line %d is not a line", w.Line)
		} else {
			d.plant(cb)
		}
		return cb
	})
	return godap.SetBreakpointsResponseBody{Breakpoints: out}, nil
}

func (s *Server) setFunctionBreakpoints(r *request) (any, error) {
	var a godap.SetFunctionBreakpointsArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, _ := s.current()
	out := s.replaceBreakpoints(d, s.bps.swapper(&s.bps.functions), len(a.Breakpoints), func(i int) *clientBreakpoint {
		w := a.Breakpoints[i]
		cb := s.bps.newBP(kindFunction)
		cb.name, cb.cond, cb.hitCond = strings.TrimSpace(w.Name), w.Condition, w.HitCondition
		if cb.name == "" {
			cb.message = "no function name"
		} else {
			d.plant(cb)
		}
		return cb
	})
	return godap.SetFunctionBreakpointsResponseBody{Breakpoints: out}, nil
}

func (s *Server) setInstructionBreakpoints(r *request) (any, error) {
	var a godap.SetInstructionBreakpointsArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, _ := s.current()
	out := s.replaceBreakpoints(d, s.bps.swapper(&s.bps.insns), len(a.Breakpoints), func(i int) *clientBreakpoint {
		w := a.Breakpoints[i]
		cb := s.bps.newBP(kindInstruction)
		cb.name, cb.cond, cb.hitCond = w.InstructionReference, w.Condition, w.HitCondition
		addr, err := parseAddr(w.InstructionReference)
		if err != nil {
			cb.message = err.Error()
		} else {
			cb.addr = uint64(int64(addr) + int64(w.Offset))
			d.plant(cb)
		}
		return cb
	})
	return godap.SetInstructionBreakpointsResponseBody{Breakpoints: out}, nil
}

// replaceBreakpoints carries out a set*Breakpoints request, which replaces
// the client's whole set of one kind: swap exchanges the stored set for the
// one it is given and returns what was stored (called under the table's
// lock); the old breakpoints are unplanted first, then mk makes each new
// one (planting it, or saying why not). It returns the new breakpoints'
// views in the request's order.
func (s *Server) replaceBreakpoints(d *debuggee, swap func([]*clientBreakpoint) []*clientBreakpoint, n int, mk func(i int) *clientBreakpoint) []godap.Breakpoint {
	s.bps.mu.Lock()
	old := swap(nil)
	s.bps.mu.Unlock()
	for _, cb := range old {
		d.unplant(cb)
	}
	list := make([]*clientBreakpoint, 0, n)
	out := make([]godap.Breakpoint, 0, n)
	for i := 0; i < n; i++ {
		cb := mk(i)
		list = append(list, cb)
		out = append(out, s.bps.view(cb))
	}
	s.bps.mu.Lock()
	swap(list)
	s.bps.mu.Unlock()
	return out
}

// parseAddr reads a memory or instruction reference: 0x-prefixed hex or
// decimal.
func parseAddr(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an address", s)
	}
	return v, nil
}
