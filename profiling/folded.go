package profiling

import (
	"bufio"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Folded aggregates samples into folded stacks, the format of Brendan
// Gregg's stackcollapse scripts that flamegraph.pl, inferno and speedscope
// read: "comm;outermost;...;innermost count" per distinct stack.
type Folded struct {
	index  map[string]int // stack → its position in stacks and counts
	stacks []string
	counts []uint64
	buf    []byte
}

// NewFolded makes an empty aggregation.
func NewFolded() *Folded { return &Folded{index: map[string]int{}} }

// Add counts one sample (every sample counts, one with no frame too). The
// line is built in a reused buffer and looked up without a copy: only a
// stack not seen before costs an allocation.
func (f *Folded) Add(s *Sample) {
	comm := s.Comm
	if comm == "" {
		comm = "[unknown]"
	}
	b := appendFoldName(f.buf[:0], comm)
	for i := len(s.Frames) - 1; i >= 0; i-- {
		b = append(b, ';')
		b = appendFoldName(b, FrameName(&s.Frames[i]))
	}
	if len(s.Frames) == 0 {
		b = append(b, ";[unknown]"...)
	}
	f.buf = b
	if i, ok := f.index[string(b)]; ok {
		f.counts[i]++
		return
	}
	k := string(b)
	f.index[k] = len(f.stacks)
	f.stacks = append(f.stacks, k)
	f.counts = append(f.counts, 1)
}

// WriteTo writes the stacks sorted by name, as stackcollapse does.
func (f *Folded) WriteTo(w io.Writer) (int64, error) {
	order := make([]int, len(f.stacks))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return f.stacks[order[i]] < f.stacks[order[j]] })
	bw := bufio.NewWriter(w)
	var n int64
	var line []byte
	for _, i := range order {
		line = append(line[:0], f.stacks[i]...)
		line = append(line, ' ')
		line = strconv.AppendUint(line, f.counts[i], 10)
		line = append(line, '\n')
		m, err := bw.Write(line)
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

// appendFoldName appends a name, kept from breaking the folded format:
// ';' separates frames and the count follows the last space-free run.
func appendFoldName(b []byte, s string) []byte {
	if strings.IndexByte(s, ';') < 0 && strings.IndexByte(s, '\n') < 0 {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ';':
			b = append(b, ':')
		case '\n':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return b
}
