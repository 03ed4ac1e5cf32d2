package services

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate/probes"
	"github.com/sondedbg/sonde/translate/probes/ccond"
	"github.com/sondedbg/sonde/variables"
)

// Breakpoints as fast probes. A software breakpoint with a Condition is
// planted as a probe with the condition compiled into its payload
// (translate/probes/ccond) when it can be: the program stops only where the
// condition holds, and a false condition costs nanoseconds instead of a
// stop, an evaluation and a resume. The stop is reported at the
// breakpoint's address with the application's registers (the trampoline's
// translation table), and hits, IgnoreCount and Temporary work as for any
// breakpoint. When the condition cannot be compiled or the site cannot
// take a jump, the breakpoint is an int3 whose condition the agent
// evaluates at each hit, as before.
//
// The "Probe" property (sonde's) asks for it explicitly: true makes a
// breakpoint without a condition a probe too (every hit stops), false never
// uses one. The breakpoint's status instances say "Probe": true for
// planted probes and carry "ProbeFallback" (why not) when one was asked
// for, or a condition was given, and an int3 was planted instead.

// probePlant is one client breakpoint instance planted as a probe.
type probePlant struct {
	set   *probes.Set
	probe *probes.Probe
	addr  uint64
	// compiled: the payload evaluates the Condition (the hit handler does
	// not evaluate it again: the thread is inside the trampoline then).
	compiled bool
}

type probeState struct {
	mu      sync.Mutex
	sets    map[*target.Context]*probes.Set
	planted map[*target.Breakpoint]*probePlant
	// fallback holds why a breakpoint that wanted a probe got an int3.
	fallback map[*target.Breakpoint]string
}

func newProbeState() *probeState {
	return &probeState{sets: map[*target.Context]*probes.Set{},
		planted: map[*target.Breakpoint]*probePlant{}, fallback: map[*target.Breakpoint]string{}}
}

// wantsProbe says whether a breakpoint's properties ask for a probe.
func wantsProbe(p map[string]any) (want, explicit bool) {
	if v, ok := p["Probe"].(bool); ok {
		return v, v
	}
	cond, _ := p["Condition"].(string)
	return strings.TrimSpace(cond) != "", false
}

// plantProbe plants one instance of a client breakpoint as a probe when its
// properties ask for one and it can be; ok false leaves it to an int3.
// why says why not (empty when no probe was wanted).
func (bs *breakpoints) plantProbe(proc *target.Context, p map[string]any, s target.BreakpointSpec) (bp *target.Breakpoint, why string) {
	want, _ := wantsProbe(p)
	if !want || s.Kind != target.BreakpointSoftware {
		return nil, ""
	}
	cond, _ := p["Condition"].(string)
	cond = strings.TrimSpace(cond)
	if strings.Contains(cond, "$printf") {
		return bs.plantDPrintf(proc, p, s, cond)
	}
	var x *probes.Expr
	if cond != "" {
		var err error
		if x, err = bs.compileCondition(proc, s.Addr, cond); err != nil {
			return nil, err.Error()
		}
	}
	fn, err := bs.probeFunction(proc, s.Addr)
	if err != nil {
		return nil, err.Error()
	}
	set, err := bs.probeSet(proc)
	if err != nil {
		return nil, err.Error()
	}
	loc, _ := p["ID"].(string)
	pr, err := set.AddStopIf(loc, s.Addr, fn, x, bs.onBreakpointHit)
	if err != nil {
		return nil, err.Error()
	}
	bp = pr.Breakpoint()
	st := bs.probes
	st.mu.Lock()
	st.planted[bp] = &probePlant{set: set, probe: pr, addr: s.Addr, compiled: cond != ""}
	st.mu.Unlock()
	return bp, ""
}

// noteProbeFallback records why a breakpoint that wanted a probe is an int3.
func (bs *breakpoints) noteProbeFallback(bp *target.Breakpoint, why string) {
	if why == "" {
		return
	}
	st := bs.probes
	st.mu.Lock()
	st.fallback[bp] = why
	st.mu.Unlock()
}

// probeSet returns the process's probe set, made on first use.
func (bs *breakpoints) probeSet(proc *target.Context) (*probes.Set, error) {
	st := bs.probes
	st.mu.Lock()
	defer st.mu.Unlock()
	if s := st.sets[proc]; s != nil {
		return s, nil
	}
	s, err := probes.New(bs.target, proc)
	if err != nil {
		return nil, err
	}
	st.sets[proc] = s
	return s, nil
}

// compileCondition compiles a condition at a run-time address of proc.
func (bs *breakpoints) compileCondition(proc *target.Context, addr uint64, text string) (*probes.Expr, error) {
	site, err := bs.conditionSite(proc, addr)
	if err != nil {
		return nil, err
	}
	return ccond.Compile(text, site)
}

// conditionSite is what compiling a condition at addr needs: the module's
// DWARF and CFI, and globals of the other modules.
func (bs *breakpoints) conditionSite(proc *target.Context, addr uint64) (ccond.Site, error) {
	mods, err := bs.session.Modules(proc)
	if err != nil {
		return ccond.Site{}, err
	}
	m := mods.ForAddress(addr)
	if m == nil {
		return ccond.Site{}, fmt.Errorf("%#x is in no module", addr)
	}
	b, err := bs.session.Binary(m)
	if b == nil {
		return ccond.Site{}, fmt.Errorf("%s: no symbols: %v", m.Name, err)
	}
	r, err := variables.For(b)
	if r == nil {
		return ccond.Site{}, fmt.Errorf("%s: no debug information: %v", m.Name, err)
	}
	return ccond.Site{PC: addr, Bias: m.Bias, Binary: b, Reader: r,
		Global: func(name string) (*variables.Variable, *variables.Reader, uint64, error) {
			return bs.session.FindGlobal(mods, name)
		}}, nil
}

// maxProbedFunction bounds the code read to check a probe's site.
const maxProbedFunction = 4 << 20

// probeFunction reads the function containing addr (ELF symbol bounds), for
// site analysis.
func (bs *breakpoints) probeFunction(proc *target.Context, addr uint64) (*probes.Function, error) {
	name, lo, hi, err := bs.session.FunctionBounds(proc, addr)
	if err != nil {
		return nil, err
	}
	if hi-lo > maxProbedFunction {
		return nil, fmt.Errorf("function %s is %d bytes long", name, hi-lo)
	}
	pad := bs.session.PaddingAfter(proc, hi, 15)
	code := make([]byte, hi-lo+uint64(pad))
	if _, err := proc.ReadMemory(lo, code); err != nil {
		return nil, err
	}
	fn := &probes.Function{Name: name, Lo: lo, Code: code[:hi-lo], Padding: code[hi-lo:]}
	// The functions a short branch into the site can come from.
	if near, err := bs.session.FunctionsNear(proc, lo, hi, 128); err == nil {
		for _, n := range near {
			if n.Hi-n.Lo > maxProbedFunction {
				continue
			}
			c := make([]byte, n.Hi-n.Lo)
			if k, _ := proc.ReadMemory(n.Lo, c); k == len(c) {
				fn.Neighbors = append(fn.Neighbors, probes.Function{Name: n.Name, Lo: n.Lo, Code: c})
			}
		}
	}
	return fn, nil
}

// plantedAddress is the address a planted instance stands for: a probe's
// breakpoint sits in its trampoline.
func (bs *breakpoints) plantedAddress(bp *target.Breakpoint) uint64 {
	st := bs.probes
	st.mu.Lock()
	defer st.mu.Unlock()
	if pp := st.planted[bp]; pp != nil {
		return pp.addr
	}
	return bp.Spec.Addr
}

// conditionCompiled reports whether bp's payload already evaluated the
// condition.
func (bs *breakpoints) conditionCompiled(bp *target.Breakpoint) bool {
	st := bs.probes
	st.mu.Lock()
	defer st.mu.Unlock()
	pp := st.planted[bp]
	return pp != nil && pp.compiled
}

// removePlanted removes one planted instance: a probe (the set goes with
// its last probe, freeing its code cache) or a breakpoint.
func (bs *breakpoints) removePlanted(bp *target.Breakpoint) {
	st := bs.probes
	st.mu.Lock()
	pp := st.planted[bp]
	delete(st.planted, bp)
	delete(st.fallback, bp)
	st.mu.Unlock()
	if pp == nil {
		bs.target.RemoveBreakpoint(bp)
		return
	}
	if err := pp.set.Remove(pp.probe); err != nil {
		bs.log.Warn("removing a breakpoint's probe", "addr", fmt.Sprintf("%#x", pp.addr), "err", err)
	}
	st.mu.Lock()
	var proc *target.Context
	for p, s := range st.sets {
		if s == pp.set && s.Len() == 0 {
			proc = p
		}
	}
	if proc != nil {
		delete(st.sets, proc)
	}
	st.mu.Unlock()
	if proc != nil {
		if err := pp.set.Close(); err != nil {
			bs.log.Warn("freeing the probes' code cache", "process", proc.ID(), "err", err)
		}
	}
}

// probeStatus adds the probe properties to a status instance.
func (bs *breakpoints) probeStatus(bp *target.Breakpoint, inst map[string]any) {
	st := bs.probes
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.planted[bp] != nil {
		inst["Probe"] = true
	} else if why := st.fallback[bp]; why != "" {
		inst["ProbeFallback"] = why
	}
}

// plantDPrintf plants a dynamic printf (a Condition of $printf) as a
// recording probe: the hits where its condition holds write the arguments
// into the probe's ring buffer, and the agent formats each record into the
// DPrintf streams as it drains the ring, in the order of the hits, without
// stopping the program. Records the program overwrote before the agent read
// them are said so in the stream ("[sonde: N dprintf records lost at ...]").
func (bs *breakpoints) plantDPrintf(proc *target.Context, p map[string]any, s target.BreakpointSpec, text string) (*target.Breakpoint, string) {
	if !bs.dprintfs.isEnabled() {
		return nil, "no DPrintf service"
	}
	site, err := bs.conditionSite(proc, s.Addr)
	if err != nil {
		return nil, err.Error()
	}
	pf, err := ccond.CompilePrintf(text, site)
	if err != nil {
		return nil, err.Error()
	}
	// Format once now: a format the arguments do not fit is refused here,
	// and the int3 path reports it as the C agent does.
	if _, err := formatPrintf(pf.Format, recordArgs(pf, make([]uint64, len(pf.Values())))); err != nil {
		return nil, err.Error()
	}
	fn, err := bs.probeFunction(proc, s.Addr)
	if err != nil {
		return nil, err.Error()
	}
	set, err := bs.probeSet(proc)
	if err != nil {
		return nil, err.Error()
	}
	loc, _ := p["ID"].(string)
	pr, _, err := set.AddRecordIf(loc, s.Addr, fn, pf.Cond, pf.Values(), func(vals []uint64) {
		text, err := formatPrintf(pf.Format, recordArgs(pf, vals))
		if err != nil {
			text = "[sonde: " + err.Error() + "]\n"
		}
		bs.dprintfs.write(text)
	}, func(n uint64) {
		bs.dprintfs.write(fmt.Sprintf("[sonde: %d dprintf records lost at %s]\n", n, loc))
	})
	if err != nil {
		return nil, err.Error()
	}
	bp := &target.Breakpoint{Spec: s, Process: proc} // a handle: no trap is planted
	st := bs.probes
	st.mu.Lock()
	st.planted[bp] = &probePlant{set: set, probe: pr, addr: s.Addr, compiled: true}
	st.mu.Unlock()
	return bp, ""
}

// recordArgs makes printf arguments of a record's values.
func recordArgs(pf *ccond.Printf, vals []uint64) []printfArg {
	out := make([]printfArg, 0, len(pf.Args))
	k := 0
	for _, arg := range pf.Args {
		switch {
		case arg.Const && arg.IsString:
			out = append(out, constArg{str: arg.Str, isStr: true})
		case arg.Const:
			out = append(out, constArg{n: arg.Int})
		default:
			out = append(out, recordedArg{t: arg.Type, size: arg.Value.Size, signed: arg.Value.Signed, bits: vals[k]})
			k++
		}
	}
	return out
}

// constArg is a constant $printf argument.
type constArg struct {
	n     int64
	str   string
	isStr bool
}

func (c constArg) Int() (int64, error)     { return c.n, nil }
func (c constArg) Float() (float64, error) { return float64(c.n), nil }
func (c constArg) IsFloat() bool           { return false }
func (c constArg) String(max int) (string, error) {
	if !c.isStr {
		return "", &printfError{msg: "$printf: %s needs a string, not a number"}
	}
	if len(c.str) > max {
		return c.str[:max], nil
	}
	return c.str, nil
}

// recordedArg is a value a probe recorded: the bits as loaded (extended to
// 64 bits by the value's signedness), its type.
type recordedArg struct {
	t      *variables.Type
	size   int
	signed bool
	bits   uint64
}

func (r recordedArg) IsFloat() bool {
	t := r.t.Strip()
	return t != nil && t.Kind == variables.KindBase && t.Encoding == variables.EncFloat
}

func (r recordedArg) Int() (int64, error) {
	if r.IsFloat() {
		f, err := r.Float()
		return int64(f), err
	}
	return int64(r.bits), nil
}

func (r recordedArg) Float() (float64, error) {
	if !r.IsFloat() {
		return float64(int64(r.bits)), nil
	}
	if r.size == 4 {
		return float64(math.Float32frombits(uint32(r.bits))), nil
	}
	return math.Float64frombits(r.bits), nil
}

func (r recordedArg) String(int) (string, error) {
	return "", &printfError{msg: "$printf: %s needs a string, not a recorded value"}
}

// writeDPrintfAtHit writes the text of a dynamic printf evaluated at a stop
// (an int3's): what recording probes wrote before it is drained first, so
// that the stream keeps the order of the hits (exactly, for one thread).
func (bs *breakpoints) writeDPrintfAtHit(text string) {
	if text == "" {
		return
	}
	st := bs.probes
	st.mu.Lock()
	sets := make([]*probes.Set, 0, len(st.sets))
	for _, s := range st.sets {
		sets = append(sets, s)
	}
	st.mu.Unlock()
	for _, s := range sets {
		s.DrainAll()
	}
	bs.dprintfs.write(text)
}
