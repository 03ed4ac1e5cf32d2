package services

import (
	"sync"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/variables"
)

// dataState is what the Expressions service and the data side of Symbols
// keep per agent.
type dataState struct {
	exprs  exprTable
	frames frameStacks

	madeMu sync.Mutex
	made   map[*variables.Type]int // made-up types by pointer
	madeBy map[int]madeType
	nextTS int
}

type madeType struct {
	t   *variables.Type
	mod uint64 // module start of the DWARF types it refers to
}

func newDataState() *dataState {
	d := &dataState{made: map[*variables.Type]int{}, madeBy: map[int]madeType{}}
	d.exprs.byID = map[string]*exprEntry{}
	d.exprs.watching = map[*tcf.Channel]bool{}
	d.frames.stacks = map[*target.Context]frameStack{}
	d.frames.envs = map[string]cachedEnv{}
	return d
}

// data is the agent's Expressions and data-symbol state.
func (a *Agent) data() *dataState { return a.exprData }

// forget drops what the Expressions service keeps of a thread, or of every
// thread of a process, that is gone: frames and the scopes of frames.
func (d *dataState) forget(ctx *target.Context) {
	gone := func(thread *target.Context) bool { return thread == ctx || thread.Process() == ctx }
	d.frames.mu.Lock()
	defer d.frames.mu.Unlock()
	for thread := range d.frames.stacks {
		if gone(thread) {
			delete(d.frames.stacks, thread)
		}
	}
	for id, c := range d.frames.envs {
		if c.ee != nil && c.ee.thread != nil && gone(c.ee.thread) {
			delete(d.frames.envs, id)
		}
	}
}
