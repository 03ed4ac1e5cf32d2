package dap

import (
	"sync"

	godap "github.com/google/go-dap"
)

// frameSources keeps the Source of each file a stack frame named: a
// stackTrace names the same few files at every stop (Rust's std frames
// alone are a dozen paths under /rustc/<hash>/library), and cleaning each
// path and allocating its Source again was most of a replayed frame's
// formatting. The Sources are shared by responses and never changed after
// they are made (the stackTrace encoder only reads them).
var frameSources = struct {
	sync.Mutex
	m map[string]*godap.Source
}{m: map[string]*godap.Source{}}

// maxFrameSources bounds the cache (a program with more files than this
// has its frames' Sources made per request past it).
const maxFrameSources = 8192

// frameSource is sourceOf(path), made once per path.
func frameSource(path string) *godap.Source {
	frameSources.Lock()
	src, ok := frameSources.m[path]
	frameSources.Unlock()
	if ok {
		return src
	}
	src = sourceOf(path)
	frameSources.Lock()
	if len(frameSources.m) < maxFrameSources {
		frameSources.m[path] = src
	}
	frameSources.Unlock()
	return src
}
