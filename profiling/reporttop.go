package profiling

import (
	"path/filepath"
	"sort"
	"strings"
)

// top returns the n entries with the most total samples and the n with the
// most self samples (n <= 0: every entry), ordered by total, then self,
// then name.
func (r *Report) top(n int) []*reportEntry {
	list := make([]*reportEntry, 0, len(r.entries))
	for _, e := range r.entries {
		list = append(list, e)
	}
	byTotal := func(a, b *reportEntry) bool {
		if a.total != b.total {
			return a.total > b.total
		}
		if a.self != b.self {
			return a.self > b.self
		}
		if a.function != b.function {
			return a.function < b.function
		}
		if a.comm != b.comm {
			return a.comm < b.comm
		}
		return a.module < b.module
	}
	if n > 0 && len(list) > n {
		sort.Slice(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if a.self != b.self {
				return a.self > b.self
			}
			return byTotal(a, b)
		})
		keep := map[*reportEntry]bool{}
		for _, e := range list[:n] {
			if e.self > 0 {
				keep[e] = true
			}
		}
		sort.Slice(list, func(i, j int) bool { return byTotal(list[i], list[j]) })
		out := list[:n:n]
		for _, e := range list[n:] {
			if keep[e] {
				out = append(out, e)
			}
		}
		list = out
	}
	sort.Slice(list, func(i, j int) bool { return byTotal(list[i], list[j]) })
	return list
}

// reportModule is a module as perf report's Shared Object column shows it:
// the file's base name, or the pseudo-file's name with its brackets
// ([kernel.kallsyms], [vdso]).
func reportModule(path string) string {
	if strings.HasPrefix(path, "[") || path == "" {
		return path
	}
	return filepath.Base(path)
}
