package core

import (
	"fmt"
	"strings"
	"testing"
)

// TestLayout checks the pure rules: areas split at NT_FILE entries, NT_FILE
// entries without a PT_LOAD, overlapping and wrapping segments, and which
// bytes the core holds when it is cut short.
func TestLayout(t *testing.T) {
	ld := func(vaddr, memsz, filesz, off uint64) Segment {
		return Segment{Type: ptLoad, Flags: pfR, Vaddr: vaddr, MemSize: memsz, FileSize: filesz, Offset: off}
	}
	cases := []struct {
		name     string
		segs     []Segment
		files    []FileMapping
		coreSize uint64
		areas    string // "start-end:load/file" ...
		core     string // per area: "start-end@offset" of core bytes, or "-"
		missing  string // per area: "start+truncEnd"
		problems []ProblemKind
	}{
		{
			name:     "split at files",
			segs:     []Segment{ld(0x1000, 0x3000, 0x3000, 0x100)},
			files:    []FileMapping{{Start: 0x2000, End: 0x3000, Offset: 0x5000, Path: "/f"}},
			coreSize: 0x10000,
			areas:    "1000-2000:0/-1 2000-3000:0/0 3000-4000:0/-1",
			core:     "1000-2000@100 2000-3000@1100 3000-4000@2100",
			missing:  "2000+2000 3000+3000 4000+4000",
		},
		{
			name:     "file without a segment",
			segs:     []Segment{ld(0x1000, 0x1000, 0, 0x100)},
			files:    []FileMapping{{Start: 0x1000, End: 0x3000, Path: "/f"}},
			coreSize: 0x10000,
			areas:    "1000-2000:0/0 2000-3000:-1/0",
			core:     "- -",
			missing:  "1000+1000 2000+2000",
		},
		{
			name:     "overlap: the earlier segment keeps it",
			segs:     []Segment{ld(0x1000, 0x2000, 0x2000, 0), ld(0x2000, 0x2000, 0x2000, 0x2000)},
			coreSize: 0x10000,
			areas:    "1000-3000:0/-1 3000-4000:1/-1",
			core:     "1000-3000@0 3000-4000@3000",
			missing:  "3000+3000 4000+4000",
			problems: []ProblemKind{ProblemBadSegment},
		},
		{
			name:     "truncated in a segment",
			segs:     []Segment{ld(0x1000, 0x2000, 0x1800, 0x800)},
			coreSize: 0x1000,
			areas:    "1000-3000:0/-1",
			core:     "1000-1800@800",
			missing:  "1800+2800",
			problems: []ProblemKind{ProblemTruncated},
		},
		{
			name:     "segment past the end of the file, filesz > memsz, wrap",
			segs:     []Segment{ld(0x1000, 0x1000, 0x2000, 0x9000), ld(^uint64(0)-0xfff, 0x2000, 0, 0)},
			coreSize: 0x1000,
			areas:    "1000-2000:0/-1",
			core:     "-",
			missing:  "1000+2000",
			problems: []ProblemKind{ProblemBadSegment, ProblemTruncated, ProblemBadSegment},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var problems []Problem
			l := newLayout(tc.segs, tc.files, tc.coreSize, &problems)
			var areas, core, missing []string
			for _, a := range l.areas {
				areas = append(areas, fmt.Sprintf("%x-%x:%d/%d", a.start, a.end, a.load, a.file))
				if s, e, off := l.coreBytes(a); e > s {
					core = append(core, fmt.Sprintf("%x-%x@%x", s, e, off))
				} else {
					core = append(core, "-")
				}
				ms, te := l.missing(a)
				missing = append(missing, fmt.Sprintf("%x+%x", ms, te))
			}
			for what, got := range map[string][2]string{
				"areas":   {strings.Join(areas, " "), tc.areas},
				"core":    {strings.Join(core, " "), tc.core},
				"missing": {strings.Join(missing, " "), tc.missing},
			} {
				if got[0] != got[1] {
					t.Errorf("%s: %s, want %s", what, got[0], got[1])
				}
			}
			var kinds []ProblemKind
			for _, p := range problems {
				kinds = append(kinds, p.Kind)
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tc.problems) {
				t.Errorf("problems %v, want %v: %v", kinds, tc.problems, problems)
			}
		})
	}
}
