package profiling

import (
	"bufio"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Folded aggregates samples into folded stacks, the format of Brendan
// Gregg's stackcollapse scripts that flamegraph.pl, inferno and speedscope
// read: "comm;outermost;...;innermost count" per distinct stack.
type Folded struct {
	index  map[string]int // stack → its position in stacks and counts
	stacks []string
	counts []uint64
	buf    []byte
	// byNames finds a stack by the identity of its names (the address and
	// length of each string) before its text is built: a profile's names
	// are the same few strings, shared by every sample that shows them, so
	// most samples cost a hash of a few words rather than a line of text
	// and its hash. Two strings at one address with one length are equal,
	// so a hit is the stack the text would find; a miss builds the text.
	byNames map[uint64][]namedStack
	nNamed  int
	ids     []nameID
}

// nameID is a string's identity: its bytes' address (which keeps them from
// being reused while held here) and length.
type nameID struct {
	p *byte
	n int
}

type namedStack struct {
	ids   []nameID
	stack int
}

// NewFolded makes an empty aggregation.
func NewFolded() *Folded { return &Folded{index: map[string]int{}, byNames: map[uint64][]namedStack{}} }

// unknownStack ends the line of a sample without frames.
const unknownStack = ";[unknown]"

// Add counts one sample (every sample counts, one with no frame too). The
// line is built in a reused buffer and looked up without a copy: only a
// stack not seen before costs an allocation.
func (f *Folded) Add(s *Sample) {
	comm := s.Comm
	if comm == "" {
		comm = "[unknown]"
	}
	ids := append(f.ids[:0], idOf(comm))
	h := mixID(0, ids[0])
	for i := len(s.Frames) - 1; i >= 0; i-- {
		id := idOf(FrameName(&s.Frames[i]))
		ids = append(ids, id)
		h = mixID(h, id)
	}
	if len(s.Frames) == 0 {
		ids = append(ids, idOf(unknownStack))
		h = mixID(h, ids[1])
	}
	f.ids = ids
	for _, e := range f.byNames[h] {
		if slices.Equal(e.ids, ids) {
			f.counts[e.stack]++
			return
		}
	}
	b := appendFoldName(f.buf[:0], comm)
	for i := len(s.Frames) - 1; i >= 0; i-- {
		b = append(b, ';')
		b = appendFoldName(b, FrameName(&s.Frames[i]))
	}
	if len(s.Frames) == 0 {
		b = append(b, unknownStack...)
	}
	f.buf = b
	i, ok := f.index[string(b)]
	if ok {
		f.counts[i]++
	} else {
		k := string(b)
		i = len(f.stacks)
		f.index[k] = i
		f.stacks = append(f.stacks, k)
		f.counts = append(f.counts, 1)
	}
	// Names made afresh for each sample would grow byNames without
	// bound: past a few entries per stack it starts over.
	if f.nNamed >= 4*len(f.stacks)+4096 {
		clear(f.byNames)
		f.nNamed = 0
	}
	f.byNames[h] = append(f.byNames[h], namedStack{ids: slices.Clone(ids), stack: i})
	f.nNamed++
}

func idOf(s string) nameID { return nameID{unsafe.StringData(s), len(s)} }

func mixID(h uint64, id nameID) uint64 {
	h ^= uint64(uintptr(unsafe.Pointer(id.p)))
	h *= 0x9e3779b97f4a7c15
	h ^= uint64(id.n)
	h *= 0xff51afd7ed558ccd
	return h ^ h>>29
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

// appendFoldName appends a name kept from breaking the folded format, as
// its readers parse it: flamegraph.pl and inferno split a line's stack on
// ';', take the last whitespace-separated number as the count and, when
// what precedes it ends in whitespace and a number too, read the line as a
// differential one (two counts); speedscope takes the last " N". So in a
// name
//   - ';' becomes ':' (a Java perf-map name "LFoo;::bar");
//   - a control character (newline, tab, ...) becomes ' ', for the line
//     and for the SVG flamegraph.pl writes (XML refuses them);
//   - bytes that are not UTF-8 become U+FFFD (XML again);
//   - whitespace before a trailing number becomes '_' ("frame 12" reads
//     "frame_12"), so no name can pass for a count.
//
// Everything else passes: spaces, parentheses, '<>' and ',' of demangled
// C++ and Rust names ("(anonymous namespace)::f(int, char) const").
func appendFoldName(b []byte, s string) []byte {
	if foldSafe(s) {
		return append(b, s...)
	}
	start := len(b)
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == ';':
			b = append(b, ':')
		case r < 0x20 || r == 0x7f:
			b = append(b, ' ')
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	// A trailing number after whitespace: the whitespace becomes '_'.
	name := b[start:]
	d := len(name)
	for d > 0 && (name[d-1] >= '0' && name[d-1] <= '9' || name[d-1] == '.') {
		d--
	}
	if d < len(name) && d > 0 && name[d-1] == ' ' {
		for d > 0 && name[d-1] == ' ' {
			d--
			name[d] = '_'
		}
	}
	return b
}

// foldSafe reports whether s needs no change in a folded line: no ';', no
// control character, valid UTF-8, and not ending in a space and a number.
func foldSafe(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ';' || c < 0x20 || c == 0x7f:
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	return (ascii || utf8.ValidString(s)) && foldSafeEnd(s)
}

// foldSafeEnd reports whether s does not end in a space and a number.
func foldSafeEnd(s string) bool {
	d := len(s)
	for d > 0 && (s[d-1] >= '0' && s[d-1] <= '9' || s[d-1] == '.') {
		d--
	}
	return d == len(s) || d == 0 || s[d-1] != ' '
}
