package profiling

import (
	"sort"

	"github.com/sondedbg/sonde/unwind/snapshot"
)

// unreadFile is the name of the file mapping that holds pc when sonde has
// no module for it ("" if none): a file deleted before the recording ended
// (a program that removed its own binary, a memfd, `/x (deleted)`) or one
// changed since that perf's build-id cache has no copy of. perf shows such
// a frame as [unknown] in that file, and so does sonde.
func unreadFile(maps []snapshot.Mapping, pc uint64) string {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > pc })
	if i < len(maps) && maps[i].Start <= pc && isFilePath(maps[i].Name) {
		return maps[i].Name
	}
	return ""
}

// shownByPerf reports whether perf shows a sampled user pc that no module
// holds as a frame even when the sample was taken in the kernel: in JIT
// code (anonymous memory) and in a file it could not read.
func shownByPerf(maps []snapshot.Mapping, pc uint64) bool {
	return inAnon(maps, pc) || unreadFile(maps, pc) != ""
}
