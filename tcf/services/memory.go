package services

import (
	"errors"
	"sync"
	"time"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// Memory.get/set/fill mode bits.
const (
	memModeContinueOnError = 1
	memModeVerify          = 2
)

// Range error status bits (TCF Memory "stat").
const (
	rangeUnknown     = 1
	rangeInvalid     = 2
	rangeCannotRead  = 4
	rangeCannotWrite = 8
)

// maxMemoryTransfer bounds one Memory.get/set/fill, so a client cannot make the
// agent allocate without bound.
const maxMemoryTransfer = 64 << 20

// memoryProps are a memory context's Memory properties, in the order the
// replies have always had them (the keys' order).
type memoryProps struct {
	AccessTypes []string `json:"AccessTypes"`
	AddressSize int      `json:"AddressSize"`
	BigEndian   bool     `json:"BigEndian"`
	EndBound    uint64   `json:"EndBound"`
	ID          string   `json:"ID"`
	Name        string   `json:"Name"`
	ProcessID   string   `json:"ProcessID"`
	StartBound  uint64   `json:"StartBound"`
}

// memoryContext is a process's Memory properties.
func memoryContext(c *target.Context) memoryProps {
	return memoryProps{
		ID:          string(c.ID()),
		ProcessID:   string(c.ID()),
		Name:        c.Name(),
		AddressSize: 8,
		EndBound:    ^uint64(0),
		AccessTypes: []string{string(target.AccessInstruction), string(target.AccessData), string(target.AccessUser), "rd-stop", "wr-stop"},
	}
}

// memoryChange is one range of a memoryChanged event.
type memoryChange struct {
	Addr uint64 `json:"addr"`
	Size uint64 `json:"size"`
}

// memoryRange is one entry of a Memory reply's error ranges.
type memoryRange struct {
	Addr uint64 `json:"addr"`
	Size uint64 `json:"size"`
	Stat int    `json:"stat"`
	Msg  any    `json:"msg,omitempty"`
}

// memorySvc is the Memory service's commands over the target's memory; its events are sent by memoryEvent.
type memorySvc struct {
	a *Agent
}

// RegisterMemory adds the Memory service. Software breakpoints never show in
// what it reads; writes under them keep them planted.
func (a *Agent) RegisterMemory() {
	ms := &memorySvc{a: a}
	svc := a.srv.Service("Memory")
	svc.Command("getContext", ms.getContext)
	svc.Command("getChildren", ms.getChildren)
	svc.Command("get", ms.get)
	svc.Command("set", ms.set)
	svc.Command("fill", ms.fill)
}

func (ms *memorySvc) getContext(c *tcf.Call) {
	a := ms.a
	ctx, err := a.contextArg(c)
	if err == nil && !ctx.IsProcess() {
		err = target.Errorf(target.CodeInvalidContext, "memory context", ctx.ID(), errors.New("threads share their process's memory: use the process ID"))
	}
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(memoryContext(ctx)).Send()
}

func (ms *memorySvc) getChildren(c *tcf.Call) {
	a := ms.a
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	out := []string{}
	if id == "" {
		for _, p := range a.target.Processes() {
			out = append(out, string(p.ID()))
		}
	} else if _, err := a.lookup(id); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(out).Send()
}

func (ms *memorySvc) get(c *tcf.Call) {
	a := ms.a
	args := c.Args()
	id, addr := args.String(), args.Uint64()
	_ = args.Int() // word size: bytes are bytes on x86-64
	size, mode := args.Int(), args.Int()
	if err := args.End(); err != nil {
		c.Reply().Null().Error(err).Null().Send()
		return
	}
	ctx, err := a.memoryArgs(id, size)
	if err != nil {
		c.Reply().Null().Error(err).Null().Send()
		return
	}
	// The reply copies the bytes: read them into a reused buffer (no
	// allocation and clearing of up to maxMemoryTransfer per command),
	// zeroing only what could not be read.
	bp := readBuffers.Get().(*[]byte)
	if cap(*bp) < size {
		*bp = make([]byte, size)
	}
	data := (*bp)[:size]
	ranges, err := transfer(addr, data, mode, ctx.ReadMemory, rangeCannotRead)
	for _, r := range ranges {
		clear(data[r.Addr-addr : r.Addr-addr+r.Size])
	}
	c.Reply().Binary(data).Error(err).Data(nullIfEmpty(ranges)).Send()
	readBuffers.Put(bp)
}

func (ms *memorySvc) set(c *tcf.Call) {
	a := ms.a
	args := c.Args()
	id, addr := args.String(), args.Uint64()
	_ = args.Int()
	size, mode := args.Int(), args.Int()
	data := args.Binary()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	if len(data) < size {
		size = len(data)
	}
	a.write(c, id, addr, data[:size], mode)
}

func (ms *memorySvc) fill(c *tcf.Call) {
	a := ms.a
	args := c.Args()
	id, addr := args.String(), args.Uint64()
	_ = args.Int()
	size, mode := args.Int(), args.Int()
	var pattern []int
	args.JSON(&pattern)
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	if _, err := a.memoryArgs(id, size); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	if len(pattern) == 0 {
		pattern = []int{0}
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(pattern[i%len(pattern)])
	}
	a.write(c, id, addr, data, mode)
}

var errNoProgress = errors.New("memory access made no progress")

// readBuffers holds the scratch buffers of Memory.get.
var readBuffers = sync.Pool{New: func() any { return new([]byte) }}

func (a *Agent) memoryArgs(id string, size int) (*target.Context, error) {
	if size < 0 || size > maxMemoryTransfer {
		return nil, tcf.Errorf(tcf.CodeInvalidDataSize, "memory transfer of %d bytes: at most %d per command", size, maxMemoryTransfer)
	}
	return a.lookup(id)
}

func (a *Agent) write(c *tcf.Call, id string, addr uint64, data []byte, mode int) {
	ctx, err := a.memoryArgs(id, len(data))
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ranges, err := transfer(addr, data, mode, ctx.WriteMemory, rangeCannotWrite)
	if err == nil && mode&memModeVerify != 0 {
		back := make([]byte, len(data))
		if n, rerr := ctx.ReadMemory(addr, back); rerr != nil || n != len(data) || string(back) != string(data) {
			err = tcf.Errorf(tcf.CodeOther, "memory at 0x%x did not verify after writing", addr)
		}
	}
	c.Reply().Error(err).Data(nullIfEmpty(ranges)).Send()
	if len(data) > 0 {
		a.emit("Memory", "memoryChanged", string(ctx.Process().ID()), []memoryChange{{Addr: addr, Size: uint64(len(data))}})
	}
}

// transfer moves data with op, page by page past a failure when the mode asks
// to continue on error, and describes what failed as TCF error ranges.
func transfer(addr uint64, data []byte, mode int, op func(uint64, []byte) (int, error), stat int) ([]memoryRange, error) {
	var ranges []memoryRange
	var first error
	for done := 0; done < len(data); {
		n, err := op(addr+uint64(done), data[done:])
		done += n
		if err == nil && n == 0 {
			// No progress and no reason: report the rest as failed rather
			// than loop or leave it undescribed.
			err = errNoProgress
		}
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		if done >= len(data) {
			break
		}
		// Skip to the next page and record the failed span.
		at := addr + uint64(done)
		next := (at | 4095) + 1
		skip := int(next - at)
		if skip > len(data)-done {
			skip = len(data) - done
		}
		if k := len(ranges); k > 0 && ranges[k-1].Addr+ranges[k-1].Size == at {
			ranges[k-1].Size += uint64(skip)
		} else {
			ranges = append(ranges, memoryRange{Addr: at, Size: uint64(skip), Stat: rangeInvalid | stat, Msg: tcf.Report(err, time.Now())})
		}
		done += skip
		if mode&memModeContinueOnError == 0 {
			if rest := len(data) - done; rest > 0 {
				ranges[len(ranges)-1].Size += uint64(rest)
			}
			break
		}
	}
	return ranges, first
}

func nullIfEmpty(r []memoryRange) any {
	if len(r) == 0 {
		return nil
	}
	return r
}

// memoryEvent sends the Memory service's events of a target event: a
// process is a memory context.
func (a *Agent) memoryEvent(e target.Event) {
	c := e.Context
	if !c.IsProcess() {
		return
	}
	switch e.Kind {
	case target.EventCreated:
		a.emit("Memory", "contextAdded", []any{memoryContext(c)})
	case target.EventChanged:
		a.emit("Memory", "contextChanged", []any{memoryContext(c)})
	case target.EventExited:
		a.emit("Memory", "contextRemoved", []string{string(c.ID())})
	}
}
