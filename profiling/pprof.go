package profiling

import (
	"io"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/sondedbg/sonde/unwind/snapshot"
)

// Pprof builds a pprof profile: one location per distinct (module, pc) with
// its inline chain as lines, functions with their files, and one sample per
// distinct stack. The profile is fully symbolized (pprof needs no binaries).
type Pprof struct {
	p         *profile.Profile
	mappings  map[mapKey]*profile.Mapping
	functions map[[2]string]*profile.Function
	locations map[locKey]*profile.Location
	samples   map[string]*profile.Sample
	key       strings.Builder
	locs      []*profile.Location
	// The events sampled (their value's type and unit) and the time
	// the samples span.
	events           map[string]bool
	lastEvent        string
	firstNS, lastNS  uint64
	samples0, period int64
}

// mapKey is one mapping of a file: one range of one process, or (start,
// limit and offset zero) a module whose range is not known.
type mapKey struct {
	file                 string
	start, limit, offset uint64
}

type locKey struct {
	module string
	pc     uint64
	kernel bool
}

// NewPprof makes an empty profile counting samples and the sampled event
// (CPU time for perf's and sonde profile's cpu-clock).
func NewPprof() *Pprof {
	return &Pprof{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		},
		events:    map[string]bool{},
		mappings:  map[mapKey]*profile.Mapping{},
		functions: map[[2]string]*profile.Function{},
		locations: map[locKey]*profile.Location{},
		samples:   map[string]*profile.Sample{},
	}
}

// Add counts one sample. A sample's frames that belong to one physical frame
// (an inline chain) become one location with several lines, as pprof wants.
func (pp *Pprof) Add(s *Sample) {
	pp.account(s)
	pp.locs = pp.locs[:0]
	pp.key.Reset()
	pp.key.WriteString(s.Comm)
	for i := 0; i < len(s.Frames); {
		j := i
		for j < len(s.Frames)-1 && s.Frames[j].Inlined {
			j++
		}
		loc := pp.location(s.Frames[i:j+1], s.Maps)
		pp.locs = append(pp.locs, loc)
		pp.key.WriteByte(';')
		pp.key.WriteString(itoa(loc.ID))
		i = j + 1
	}
	if len(s.Frames) == 0 {
		loc := pp.location([]Frame{{}}, nil)
		pp.locs = append(pp.locs, loc)
		pp.key.WriteString(";" + itoa(loc.ID))
	}
	k := pp.key.String()
	smp := pp.samples[k]
	if smp == nil {
		smp = &profile.Sample{Location: append([]*profile.Location(nil), pp.locs...), Value: []int64{0, 0}}
		if s.Comm != "" {
			smp.Label = map[string][]string{"comm": {s.Comm}}
		}
		pp.samples[k] = smp
		pp.p.Sample = append(pp.p.Sample, smp)
	}
	smp.Value[0]++
	smp.Value[1] += int64(s.Period)
}

// account notes a sample's event and time, for the profile's value types,
// period and duration.
func (pp *Pprof) account(s *Sample) {
	if s.Event != pp.lastEvent || len(pp.events) == 0 {
		pp.events[s.Event] = true
		pp.lastEvent = s.Event
	}
	if s.Time != 0 {
		if pp.firstNS == 0 || s.Time < pp.firstNS {
			pp.firstNS = s.Time
		}
		pp.lastNS = max(pp.lastNS, s.Time)
	}
	pp.samples0++
	pp.period += int64(s.Period)
}

// location returns the location of one physical frame (its inline chain,
// innermost first), in the mapping of maps that holds it.
func (pp *Pprof) location(chain []Frame, maps []snapshot.Mapping) *profile.Location {
	outer := chain[len(chain)-1]
	k := locKey{outer.Module, outer.PC, outer.Kernel}
	if loc := pp.locations[k]; loc != nil {
		return loc
	}
	mk := mapKey{file: outer.Module}
	if !outer.Kernel && outer.Module != "" {
		if m := mappingAt(maps, outer.PC); m != nil && m.Name == outer.Module {
			mk.start, mk.limit, mk.offset = m.Start, m.End, m.Offset
		}
	}
	loc := &profile.Location{ID: uint64(len(pp.p.Location) + 1), Address: outer.PC, Mapping: pp.mapping(mk)}
	for i := range chain {
		f := &chain[i]
		loc.Line = append(loc.Line, profile.Line{Function: pp.function(FrameName(f), f.File, f.StartLine), Line: int64(f.Line), Column: int64(f.Column)})
	}
	pp.locations[k] = loc
	pp.p.Location = append(pp.p.Location, loc)
	return loc
}

// mappingAt is the mapping of maps (sorted by Start) holding pc, else nil.
func mappingAt(maps []snapshot.Mapping, pc uint64) *snapshot.Mapping {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > pc })
	if i < len(maps) && maps[i].Start <= pc {
		return &maps[i]
	}
	return nil
}

func (pp *Pprof) mapping(k mapKey) *profile.Mapping {
	if k.file == "" {
		return nil
	}
	m := pp.mappings[k]
	if m == nil {
		m = &profile.Mapping{ID: uint64(len(pp.p.Mapping) + 1), File: k.file, Start: k.start, Limit: k.limit, Offset: k.offset}
		pp.mappings[k] = m
		pp.p.Mapping = append(pp.p.Mapping, m)
	}
	return m
}

// function returns the profile's function of that name and file; its
// start line is the first frame's that knows it.
func (pp *Pprof) function(name, file string, startLine int) *profile.Function {
	k := [2]string{name, file}
	f := pp.functions[k]
	if f == nil {
		f = &profile.Function{ID: uint64(len(pp.p.Function) + 1), Name: name, SystemName: systemName(name), Filename: file}
		pp.functions[k] = f
		pp.p.Function = append(pp.p.Function, f)
	}
	if f.StartLine == 0 {
		f.StartLine = int64(startLine)
	}
	return f
}

// setSymbolized marks each mapping with what its locations carry, as pprof
// reads the flags: a mapping with none of functions, files and lines is
// one pprof symbolizes itself (a stripped file it may find symbols for);
// inline frames are expanded wherever lines came from DWARF (not with
// --no-inline, whose frames are ELF symbols without lines).
func (pp *Pprof) setSymbolized() {
	for _, loc := range pp.p.Location {
		m := loc.Mapping
		if m == nil {
			continue
		}
		for _, ln := range loc.Line {
			if ln.Function.Name != "[unknown]" {
				m.HasFunctions = true
			}
			if ln.Function.Filename != "" {
				m.HasFilenames = true
			}
			if ln.Line != 0 {
				m.HasLineNumbers, m.HasInlineFrames = true, true
			}
		}
	}
}

// systemName is a function's system name in the profile: its name, but ""
// for a name that looks like demangled C++ or Rust. pprof "simplifies" a
// function whose system name equals its name and looks demangled: it cuts
// every (...) and <...> out of it, which turns
// "(anonymous namespace)::Pair<int, long>::operator()" into
// "::Pair::operator" and a lambda's "{lambda(int)#1}" into "{lambda#1}".
// A system name that differs keeps the name as sonde wrote it, as the
// folded stacks and the other outputs show it. (The mangled name would be
// the right system name; frames do not carry it.)
func systemName(name string) string {
	if strings.ContainsAny(name, "<>[]()") || strings.Contains(name, "::") {
		return ""
	}
	return name
}

// Write writes the gzipped profile.
func (pp *Pprof) Write(w io.Writer, rec *Recording) error {
	if rec != nil {
		pp.p.Comments = append(pp.p.Comments, "converted by sonde perf from a perf.data recording")
		if h := rec.Header(); len(h.Cmdline) > 0 {
			pp.p.Comments = append(pp.p.Comments, strings.Join(h.Cmdline, " "))
		}
	}
	pp.setValueTypes()
	pp.setSymbolized()
	pp.mainFirst()
	pp.setBuildIDs(rec)
	if err := pp.p.CheckValid(); err != nil {
		return err
	}
	return pp.p.Write(w)
}

// setValueTypes names the second value, the period's sum, by the sampled
// event: CPU nanoseconds for a clock (pprof shows them as time), else the
// event's count; its mean is the profile's period and the samples' time
// span its duration.
func (pp *Pprof) setValueTypes() {
	vt := &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	for ev := range pp.events {
		base, _, _ := strings.Cut(ev, ":")
		if base == "cpu-clock" || base == "task-clock" {
			continue
		}
		if vt.Type == "cpu" {
			vt = &profile.ValueType{Type: base, Unit: "count"}
		} else if vt.Type != base {
			vt = &profile.ValueType{Type: "events", Unit: "count"}
		}
	}
	if vt.Type == "" {
		vt.Type = "events"
	}
	pp.p.SampleType[1] = vt
	pp.p.PeriodType = &profile.ValueType{Type: vt.Type, Unit: vt.Unit}
	if pp.samples0 > 0 {
		pp.p.Period = (pp.period + pp.samples0/2) / pp.samples0
	}
	if pp.lastNS > pp.firstNS {
		pp.p.DurationNanos = int64(pp.lastNS - pp.firstNS)
	}
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}

// mainFirst puts the main program's mapping first, where pprof looks for
// it (its "File:" line, the binary -http names): the file whose name begins
// with the command name of the most samples (a comm is at most 15 bytes),
// or, for a program run through a link with a longer name (Debian's
// /usr/bin/fdfind, a link to /usr/lib/cargo/bin/fd), whose name begins the
// command name; else the order is as first seen (the dynamic linker, often).
func (pp *Pprof) mainFirst() {
	perComm := map[string]int64{}
	for _, smp := range pp.p.Sample {
		if c := smp.Label["comm"]; len(c) == 1 {
			perComm[c[0]] += smp.Value[0]
		}
	}
	best, bestN := -1, int64(0)
	for i, m := range pp.p.Mapping {
		base := baseName(m.File)
		for comm, n := range perComm {
			if comm != "" && namesProgram(base, comm) && n > bestN {
				best, bestN = i, n
			}
		}
	}
	if best <= 0 {
		return
	}
	m := pp.p.Mapping[best]
	copy(pp.p.Mapping[1:best+1], pp.p.Mapping[:best])
	pp.p.Mapping[0] = m
	for i, m := range pp.p.Mapping {
		m.ID = uint64(i + 1)
	}
}

// namesProgram reports whether a file named base may be the program a
// command name comm names: comm begins base (python3 runs python3.11), or
// base, not a library's name, begins comm (fdfind runs fd).
func namesProgram(base, comm string) bool {
	if strings.HasPrefix(base, comm) {
		return true
	}
	return len(base) >= 2 && strings.HasPrefix(comm, base) && !strings.Contains(base, ".so") && !strings.HasPrefix(base, "[")
}
