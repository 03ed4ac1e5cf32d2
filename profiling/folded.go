package profiling

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Folded aggregates samples into folded stacks, the format of Brendan
// Gregg's stackcollapse scripts that flamegraph.pl, inferno and speedscope
// read: "comm;outermost;...;innermost count" per distinct stack.
type Folded struct {
	counts map[string]uint64
	sb     strings.Builder
}

// NewFolded makes an empty aggregation.
func NewFolded() *Folded { return &Folded{counts: map[string]uint64{}} }

// Add counts one sample (every sample counts, one with no frame too).
func (f *Folded) Add(s *Sample) {
	f.sb.Reset()
	comm := s.Comm
	if comm == "" {
		comm = "[unknown]"
	}
	f.sb.WriteString(foldName(comm))
	for i := len(s.Frames) - 1; i >= 0; i-- {
		f.sb.WriteByte(';')
		f.sb.WriteString(foldName(FrameName(&s.Frames[i])))
	}
	if len(s.Frames) == 0 {
		f.sb.WriteString(";[unknown]")
	}
	f.counts[f.sb.String()]++
}

// WriteTo writes the stacks sorted by name, as stackcollapse does.
func (f *Folded) WriteTo(w io.Writer) (int64, error) {
	keys := make([]string, 0, len(f.counts))
	for k := range f.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bw := bufio.NewWriter(w)
	var n int64
	for _, k := range keys {
		m, err := fmt.Fprintf(bw, "%s %d\n", k, f.counts[k])
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

// FrameName is how one frame is named in every output: its function, else
// [unknown], as perf spells it (the module is in Frame.Module).
func FrameName(fr *Frame) string {
	if fr.Function != "" {
		return fr.Function
	}
	return "[unknown]"
}

func baseName(p string) string {
	if strings.HasPrefix(p, "[") {
		return strings.Trim(p, "[]")
	}
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// foldName keeps a name from breaking the folded format: ';' separates
// frames and the count follows the last space-free run.
func foldName(s string) string {
	if !strings.ContainsAny(s, ";\n") {
		return s
	}
	return strings.NewReplacer(";", ":", "\n", " ").Replace(s)
}
