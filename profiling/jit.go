package profiling

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/symbols/jitmap"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// jitMaps holds the perf maps (/tmp/perf-PID.map) of the recording's
// processes, read on first use: a JIT runtime (node --perf-basic-prof, the
// JVM's perf-map-agent, .NET, LuaJIT) names its code there, and perf names a
// frame in anonymous executable memory from it, as sonde does.
type jitMaps struct {
	mu     sync.Mutex
	tables map[uint32]*jitmap.Table // nil: no map for the pid
}

// maxPerfMap bounds the size of a perf map read.
const maxPerfMap = 256 << 20

func (j *jitMaps) table(pid uint32) *jitmap.Table {
	j.mu.Lock()
	defer j.mu.Unlock()
	if t, ok := j.tables[pid]; ok {
		return t
	}
	if j.tables == nil {
		j.tables = map[uint32]*jitmap.Table{}
	}
	var t *jitmap.Table
	path := perfMapPath(pid)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() <= maxPerfMap {
		if data, err := os.ReadFile(path); err == nil {
			t, _ = jitmap.ParsePerfMap(data) // a damaged tail: keep what came before
		}
	}
	j.tables[pid] = t
	return t
}

func perfMapPath(pid uint32) string { return fmt.Sprintf("/tmp/perf-%d.map", pid) }

// jitFrame names a pc that no file maps: from the process's perf map when
// the pc is in anonymous executable memory, as perf does (its module is the
// map's path, as perf shows it); else an unnamed frame.
func (b *Builder) jitFrame(pid uint32, maps []snapshot.Mapping, pc, lookup uint64) Frame {
	f := Frame{PC: pc}
	if !inAnon(maps, pc) {
		f.Module = unreadFile(maps, pc)
		return f
	}
	f.Module = perfMapPath(pid) // perf's module for such memory, map or not
	t := b.jit.table(pid)
	if t == nil {
		return f
	}
	if s, ok := t.Lookup(lookup); ok {
		f.Function, f.Offset, f.HasOffset = s.Name, lookup-s.Start, true
	}
	return f
}

// inAnon reports whether pc is in anonymous memory of maps (sorted by
// Start), executable or not as recorded: V8 reserves its code range
// without PROT_EXEC and makes pages executable later, which no MMAP record
// shows; perf names a pc in any anonymous mapping from the perf map.
func inAnon(maps []snapshot.Mapping, pc uint64) bool {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > pc })
	return i < len(maps) && maps[i].Start <= pc && anonMem(&maps[i])
}

// anonMem reports whether m is memory no file backs, where JIT runtimes
// put their code.
func anonMem(m *snapshot.Mapping) bool {
	return m.Path == "" && m.Data == nil && (m.Name == "" || strings.HasPrefix(m.Name, "//anon") || strings.HasPrefix(m.Name, "[anon"))
}
