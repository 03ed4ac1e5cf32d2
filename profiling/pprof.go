package profiling

import (
	"io"
	"strings"

	"github.com/google/pprof/profile"
)

// Pprof builds a pprof profile: one location per distinct (module, pc) with
// its inline chain as lines, functions with their files, and one sample per
// distinct stack. The profile is fully symbolized (pprof needs no binaries).
type Pprof struct {
	p         *profile.Profile
	mappings  map[string]*profile.Mapping
	functions map[[2]string]*profile.Function
	locations map[locKey]*profile.Location
	samples   map[string]*profile.Sample
	key       strings.Builder
	locs      []*profile.Location
}

type locKey struct {
	module string
	pc     uint64
	kernel bool
}

// NewPprof makes an empty profile counting samples and CPU time.
func NewPprof() *Pprof {
	return &Pprof{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		},
		mappings:  map[string]*profile.Mapping{},
		functions: map[[2]string]*profile.Function{},
		locations: map[locKey]*profile.Location{},
		samples:   map[string]*profile.Sample{},
	}
}

// Add counts one sample. A sample's frames that belong to one physical frame
// (an inline chain) become one location with several lines, as pprof wants.
func (pp *Pprof) Add(s *Sample) {
	pp.locs = pp.locs[:0]
	pp.key.Reset()
	pp.key.WriteString(s.Comm)
	for i := 0; i < len(s.Frames); {
		j := i
		for j < len(s.Frames)-1 && s.Frames[j].Inlined {
			j++
		}
		loc := pp.location(s.Frames[i : j+1])
		pp.locs = append(pp.locs, loc)
		pp.key.WriteByte(';')
		pp.key.WriteString(itoa(loc.ID))
		i = j + 1
	}
	if len(s.Frames) == 0 {
		loc := pp.location([]Frame{{}})
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

// location returns the location of one physical frame (its inline chain,
// innermost first).
func (pp *Pprof) location(chain []Frame) *profile.Location {
	outer := chain[len(chain)-1]
	k := locKey{outer.Module, outer.PC, outer.Kernel}
	if loc := pp.locations[k]; loc != nil {
		return loc
	}
	loc := &profile.Location{ID: uint64(len(pp.p.Location) + 1), Address: outer.PC, Mapping: pp.mapping(outer.Module)}
	for i := range chain {
		f := &chain[i]
		loc.Line = append(loc.Line, profile.Line{Function: pp.function(FrameName(f), f.File), Line: int64(f.Line)})
	}
	pp.locations[k] = loc
	pp.p.Location = append(pp.p.Location, loc)
	return loc
}

func (pp *Pprof) mapping(module string) *profile.Mapping {
	if module == "" {
		return nil
	}
	m := pp.mappings[module]
	if m == nil {
		m = &profile.Mapping{ID: uint64(len(pp.p.Mapping) + 1), File: module, HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
		pp.mappings[module] = m
		pp.p.Mapping = append(pp.p.Mapping, m)
	}
	return m
}

func (pp *Pprof) function(name, file string) *profile.Function {
	k := [2]string{name, file}
	f := pp.functions[k]
	if f == nil {
		f = &profile.Function{ID: uint64(len(pp.p.Function) + 1), Name: name, SystemName: name, Filename: file}
		pp.functions[k] = f
		pp.p.Function = append(pp.p.Function, f)
	}
	return f
}

// Write writes the gzipped profile.
func (pp *Pprof) Write(w io.Writer, rec *Recording) error {
	if rec != nil {
		pp.p.Comments = append(pp.p.Comments, "converted by sonde perf from a perf.data recording")
		if h := rec.Header(); len(h.Cmdline) > 0 {
			pp.p.Comments = append(pp.p.Comments, strings.Join(h.Cmdline, " "))
		}
	}
	pp.mainFirst()
	pp.setBuildIDs(rec)
	if err := pp.p.CheckValid(); err != nil {
		return err
	}
	return pp.p.Write(w)
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
// with the command name of the most samples (a comm is at most 15 bytes);
// else the order is as first seen (the dynamic linker, often).
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
			if comm != "" && strings.HasPrefix(base, comm) && n > bestN {
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
