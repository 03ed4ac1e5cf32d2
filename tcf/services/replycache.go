package services

import (
	"sync"

	"github.com/sondedbg/sonde/tcf"
)

// replyCache keeps the encoded results of symbol-level lookups that depend
// only on a process's modules (what function holds an address, the line rows
// of an address range, a function symbol's properties). A client building a
// stack asks the same questions for every frame of a recursion and again at
// every stop; answering from here skips the symbol lookup and the JSON
// encoding. A process's entries go when its memory map changes (a library
// load or unload, exec) and when it exits; the whole cache is dropped when it
// reaches maxCachedReplies, so it never grows without bound.
type replyCache struct {
	mu sync.Mutex
	// byProc maps a process ID to its entries (key -> encoded field).
	byProc map[string]map[replyKey][]byte
	n      int
}

// replyKey names one cached answer: a kind of question and its arguments.
type replyKey struct {
	kind byte   // kindFindByAddr, kindMapToSource, kindSymbol
	lo   uint64 // address, or start of a range
	hi   uint64 // end of a range
	id   string // symbol ID
}

const (
	kindFindByAddr  = 'A'
	kindMapToSource = 'L'
	kindSymbol      = 'S'
)

const maxCachedReplies = 1 << 14

// get returns a cached encoded field.
func (rc *replyCache) get(proc string, key replyKey) ([]byte, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	v, ok := rc.byProc[proc][key]
	return v, ok
}

// put encodes v and remembers it; it returns the encoding (nil if v cannot
// be encoded, which the caller then sends the ordinary way).
func (rc *replyCache) put(proc string, key replyKey, v any) []byte {
	enc, err := tcf.AppendJSON(nil, v)
	if err != nil {
		return nil
	}
	rc.putRaw(proc, key, enc)
	return enc
}

// putRaw remembers bytes as they are.
func (rc *replyCache) putRaw(proc string, key replyKey, enc []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.n >= maxCachedReplies {
		rc.byProc, rc.n = nil, 0
	}
	if rc.byProc == nil {
		rc.byProc = map[string]map[replyKey][]byte{}
	}
	m := rc.byProc[proc]
	if m == nil {
		m = map[replyKey][]byte{}
		rc.byProc[proc] = m
	}
	if _, ok := m[key]; !ok {
		rc.n++
	}
	m[key] = enc
}

// drop forgets a process's entries.
func (rc *replyCache) drop(proc string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.n -= len(rc.byProc[proc])
	delete(rc.byProc, proc)
}
