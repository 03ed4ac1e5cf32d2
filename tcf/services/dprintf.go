package services

import (
	"sync"

	"github.com/sondedbg/sonde/tcf"
)

// DPrintf is dynamic printf: the debugger function $printf(format, args...)
// formats its arguments in the agent, C printf style, and writes the text to
// a "DPrintf" stream that a client opened (through the Streams service).
// Eclipse turns a dynamic-printf breakpoint into a breakpoint whose
// Condition is `$printf("fmt", args)` or `(cond) && $printf("fmt", args)`;
// $printf's value is 0, so the condition is false and the thread goes on
// without a visible stop, as with the C agent. A client may also evaluate
// $printf(...) as an expression (expressions_printf.go).
//
// Where the text goes: a breakpoint condition's to every open DPrintf
// stream; an expression's to the stream of the channel that evaluates it,
// and nowhere when that channel opened none (the C agent's behaviour: the
// call is then not even formatted, and still evaluates to 0).

// dprintfState is the DPrintf stream each channel opened.
type dprintfState struct {
	mu      sync.Mutex
	streams map[*tcf.Channel]*stream
	// enabled: the service is offered, so expressions know $printf.
	enabled bool
}

func (a *Agent) dprintf() *dprintfState { return a.dprintfs }

// dprintfSvc is the DPrintf service's commands; its streams are the agent's dprintfState.
type dprintfSvc struct {
	a *Agent
}

// RegisterDPrintf adds the DPrintf service and makes expressions, breakpoint
// conditions included, understand $printf.
func (a *Agent) RegisterDPrintf() {
	dps := &dprintfSvc{a: a}
	d := a.dprintf()
	d.mu.Lock()
	d.enabled = true
	d.mu.Unlock()
	svc := a.srv.Service("DPrintf")
	svc.Command("open", dps.open)
	svc.Command("close", dps.close)
}

func (dps *dprintfSvc) open(c *tcf.Call) {
	a := dps.a
	args := c.Args()
	_ = args.Props() // stream properties: none are defined
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	s, err := a.openDPrintf(c.Channel())
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).String(s.id).Send()
}

func (dps *dprintfSvc) close(c *tcf.Call) {
	a := dps.a
	if err := c.Args().End(); err != nil {
		c.ReplyError(err)
		return
	}
	a.closeDPrintf(c.Channel())
	c.ReplyError(nil)
}

// openDPrintf returns the channel's DPrintf stream, making it on first use
// (or when the client disconnected the previous one).
func (a *Agent) openDPrintf(ch *tcf.Channel) (*stream, error) {
	d := a.dprintf()
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.streams[ch]; s != nil && a.streams.lookup(s.id) == s {
		return s, nil
	}
	s := a.streams.create("DPrintf", "")
	if s == nil {
		return nil, tcf.Errorf(tcf.CodeUnsupported, "DPrintf needs the Streams service")
	}
	if _, had := d.streams[ch]; !had {
		ch.OnClose(func() {
			a.closeDPrintf(ch)
			d.mu.Lock()
			delete(d.streams, ch)
			d.mu.Unlock()
		})
	}
	d.streams[ch] = s
	return s, nil
}

// closeDPrintf ends the channel's stream: readers get end of stream, and
// further output is not kept for it.
func (a *Agent) closeDPrintf(ch *tcf.Channel) {
	d := a.dprintf()
	d.mu.Lock()
	s := d.streams[ch]
	d.streams[ch] = nil
	d.mu.Unlock()
	if s == nil {
		return
	}
	s.finish()
	a.streams.dropFinished(s)
}

// eosRead reports whether nothing is left to read from a finished stream.
func (s *stream) eosRead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eos && len(s.buf) == 0
}

// dprintfEnabled reports whether the DPrintf service is offered.
func (a *Agent) dprintfEnabled() bool { return a.dprintf().isEnabled() }

// isEnabled reports whether the DPrintf service is offered.
func (d *dprintfState) isEnabled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enabled
}

// channelDPrintf returns the channel's open DPrintf stream, or nil.
func (a *Agent) channelDPrintf(ch *tcf.Channel) *stream {
	if ch == nil {
		return nil
	}
	d := a.dprintf()
	d.mu.Lock()
	s := d.streams[ch]
	d.mu.Unlock()
	if s == nil || a.streams.lookup(s.id) != s {
		return nil // closed, or the client disconnected it
	}
	return s
}

// write appends text to every open DPrintf stream.
func (d *dprintfState) write(text string) {
	if text == "" {
		return
	}
	d.mu.Lock()
	var out []*stream
	for _, s := range d.streams {
		if s != nil {
			out = append(out, s)
		}
	}
	d.mu.Unlock()
	for _, s := range out {
		s.append([]byte(text))
	}
}
