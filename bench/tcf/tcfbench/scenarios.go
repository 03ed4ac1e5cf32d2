package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sondedbg/sonde/tcf/client"
)

// sample is what one run measured: operations, the time they took, the
// agent's CPU time meanwhile (ns; 0 without -agent-pid) and this client's.
type sample struct {
	ops    int
	dur    time.Duration
	cpu    int64
	client int64
}

// timeIt runs f, which does ops operations, and adds it to smp. CPU times
// are read outside the timed span.
func (b *bench) timeIt(smp *sample, ops int, f func() error) error {
	m := cpuMeter{b.agentPID}
	c0, s0 := m.ns(), selfCPU()
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	c1, s1 := m.ns(), selfCPU()
	if err != nil {
		return err
	}
	smp.ops += ops
	smp.dur += d
	smp.cpu += c1 - c0
	smp.client += s1 - s0
	return nil
}

// repeat makes b.runs samples, each from calls of round for b.per of wall
// time (at least once).
func (b *bench) repeat(round func(*sample) error) ([]sample, error) {
	var out []sample
	for range b.runs {
		var smp sample
		start := time.Now()
		for smp.ops == 0 || time.Since(start) < b.per {
			if err := round(&smp); err != nil {
				return nil, err
			}
		}
		out = append(out, smp)
	}
	return out, nil
}

// rate is operations per second, per sample.
func rate(ss []sample, scale float64) []float64 {
	var v []float64
	for _, s := range ss {
		v = append(v, float64(s.ops)*scale/s.dur.Seconds())
	}
	return v
}

// perOp is the time per operation in unit (time.Millisecond, ...), per sample.
func perOp(ss []sample, unit time.Duration) []float64 {
	var v []float64
	for _, s := range ss {
		v = append(v, float64(s.dur)/float64(s.ops)/float64(unit))
	}
	return v
}

// cpuPerOp is the agent's CPU µs per operation, per sample (nil without a PID).
func (b *bench) cpuPerOp(ss []sample) []float64 {
	if b.agentPID <= 0 {
		return nil
	}
	var v []float64
	for _, s := range ss {
		v = append(v, float64(s.cpu)/1e3/float64(s.ops))
	}
	return v
}

// clientPerOp is this client's CPU µs per operation, per sample: on a
// machine where the client and the agent take turns on the CPUs, the part
// of a figure no agent can make faster.
func clientPerOp(ss []sample) []float64 {
	var v []float64
	for _, s := range ss {
		v = append(v, float64(s.client)/1e3/float64(s.ops))
	}
	return v
}

// echo: round trips of Diagnostics.echo, one command at a time.
func (b *bench) echo() error {
	ctx := context.Background()
	const batch = 200
	ss, err := b.repeat(func(smp *sample) error {
		return b.timeIt(smp, batch, func() error {
			for range batch {
				r, err := b.s.c.Call(ctx, "Diagnostics", "echo", "ping")
				if err != nil {
					return err
				}
				var s string
				if err := r.Decode(&s); err != nil || s != "ping" {
					return fmt.Errorf("the Diagnostics service's echo answered %q (%v)", s, err)
				}
			}
			return nil
		})
	})
	if err != nil {
		return b.outcome(err, "echo")
	}
	b.out.figure(figure{key: "echo", label: "echo round trips", unit: "/s", vals: rate(ss, 1), cpu: b.cpuPerOp(ss), client: clientPerOp(ss)})
	return nil
}

// pipelined64: 64 Diagnostics.echo sent before the first reply is awaited.
func (b *bench) pipelined64() error {
	ctx := context.Background()
	const batches = 20
	ps := make([]*client.Pending, 64)
	ss, err := b.repeat(func(smp *sample) error {
		return b.timeIt(smp, batches*len(ps), func() error {
			for range batches {
				for i := range ps {
					p, err := b.s.c.Send("Diagnostics", "echo", "ping")
					if err != nil {
						return err
					}
					ps[i] = p
				}
				for _, p := range ps {
					r, err := p.Wait(ctx)
					if err != nil {
						return err
					}
					var s string
					if err := r.Decode(&s); err != nil || s != "ping" {
						return fmt.Errorf("the Diagnostics service's echo answered %q (%v)", s, err)
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		return b.outcome(err, "pipelined64")
	}
	b.out.figure(figure{key: "pipelined64", label: "64 pipelined echo", unit: "cmds/s", vals: rate(ss, 1), cpu: b.cpuPerOp(ss), client: clientPerOp(ss)})
	return nil
}

const memSize = 1 << 20

// memGet: Memory.get of 1 MiB (agent_big, filled with a pattern) from a
// stopped process, base64 and ZeroCopy.
func (b *bench) memGet() error {
	defer b.s.finish()
	proc, addr, err := b.memSetup()
	if err != nil {
		return b.outcome(err, "memget.base64", "memget.zerocopy")
	}
	if err := b.memRuns(b.s, "memget.base64", "Memory.get 1 MiB, base64", proc, addr); err != nil {
		return err
	}
	if !b.s.hasService("ZeroCopy") {
		b.out.na("memget.zerocopy", "the agent's Hello does not list ZeroCopy")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	zc, err := dial(ctx, b.addr, []string{"ZeroCopy"}, b.spin)
	if err != nil {
		return err
	}
	defer zc.c.Close()
	return b.memRuns(zc, "memget.zerocopy", "Memory.get 1 MiB, ZeroCopy", proc, addr)
}

// memSetup starts `agent_prog big` and runs it to the line after the fill
// (a file:line breakpoint: both agents plant those), and returns the process
// and agent_big's address.
func (b *bench) memSetup() (proc string, addr uint64, err error) {
	src, err := filepath.Abs(b.src)
	if err != nil {
		return "", 0, err
	}
	text, err := os.ReadFile(src)
	if err != nil {
		return "", 0, na("cannot read the debuggee's source for the breakpoint line: %v", err)
	}
	line := 0
	for i, l := range strings.Split(string(text), "\n") {
		if strings.Contains(l, `printf("ready %p\n"`) {
			line = i + 1
			break
		}
	}
	if line == 0 {
		return "", 0, na("%s has no printf(\"ready ...\") line", src)
	}
	proc, thread, err := b.s.startStopped(b.prog, "big")
	if err != nil {
		return "", 0, na("starting agent_prog big: %v", err)
	}
	if _, err := b.s.addBreakpoint(map[string]any{"File": src, "Line": line}); err != nil {
		return "", 0, na("breakpoint at %s:%d: %v", filepath.Base(src), line, err)
	}
	if err := b.s.resumeToStop(thread); err != nil {
		return "", 0, na("running to %s:%d: %v", filepath.Base(src), line, err)
	}
	addr, err = b.s.symbolAddress(thread, "agent_big")
	if err != nil {
		return "", 0, na("address of agent_big: %v", err)
	}
	return proc, addr, nil
}

// memRuns measures Memory.get of agent_big over s's channel.
func (b *bench) memRuns(s *session, key, label, proc string, addr uint64) error {
	ctx := context.Background()
	get := func() error {
		r, err := s.c.Call(ctx, "Memory", "get", proc, addr, 1, memSize, 0)
		if err != nil {
			return err
		}
		var data []byte
		var e error
		if err := r.Decode(&data, &e, nil); err != nil {
			return err
		}
		if e != nil {
			return na("Memory.get: %v", e)
		}
		if len(data) != memSize || data[1] != 7 || data[memSize-1] != byte(((memSize-1)*7)&0xff) {
			return na("Memory.get read %d bytes, not agent_big's pattern", len(data))
		}
		return nil
	}
	if err := get(); err != nil {
		return b.outcome(err, key)
	}
	ss, err := b.repeat(func(smp *sample) error { return b.timeIt(smp, 1, get) })
	if err != nil {
		return b.outcome(err, key)
	}
	b.out.figure(figure{key: key, label: label, unit: "MiB/s", vals: rate(ss, 1), cpu: b.cpuPerOp(ss), client: clientPerOp(ss)})
	return nil
}

// hitResume: breakpoint hit + resume, event-driven like the Python client's
// dispatch thread or Eclipse: the contextSuspended handler sends the next
// RunControl.resume without waiting for any reply.
func (b *bench) hitResume() error {
	defer b.s.finish()
	_, thread, err := b.s.startStopped(b.prog, "loop", "1000000000")
	if err != nil {
		return b.outcome(na("starting agent_prog loop: %v", err), "hit")
	}
	if _, err := b.s.addBreakpoint(map[string]any{"Location": "hit"}); err != nil {
		return b.outcome(na("breakpoint on hit: %v", err), "hit")
	}
	ss, err := b.repeat(func(smp *sample) error {
		return b.timeIt(smp, 0, func() error {
			n, err := b.hitLoop(thread)
			smp.ops += n
			return err
		})
	})
	b.s.onStop.Store(nil)
	if err != nil {
		return b.outcome(err, "hit")
	}
	b.out.figure(figure{key: "hit", label: "breakpoint hit + resume", unit: "hits/s", vals: rate(ss, 1), cpu: b.cpuPerOp(ss), client: clientPerOp(ss)})
	return nil
}

// hitLoop resumes thread from each of its stops for b.per and returns the
// number of hits.
func (b *bench) hitLoop(thread string) (int, error) {
	done := make(chan struct{})
	failed := make(chan error, 1)
	hits := 0
	var deadline time.Time
	resume := func() {
		if _, err := b.s.c.SendNow("RunControl", "resume", thread, 0, 1); err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	}
	onStop := func(id string) {
		if id != thread {
			return
		}
		if hits++; time.Now().After(deadline) {
			close(done)
			return
		}
		resume()
	}
	deadline = time.Now().Add(b.per) // before the handler can see a stop
	b.s.onStop.Store(&onStop)
	defer b.s.onStop.Store(nil)
	resume()
	select {
	case <-done:
		return hits, nil
	case err := <-failed:
		return 0, err
	case <-time.After(b.per + opTimeout):
		return 0, fmt.Errorf("breakpoint hit + resume: stuck after %d hits", hits)
	case <-b.s.c.Done():
		return 0, b.s.c.Err()
	}
}

// stack57: BenchmarkStack57's round against `agent_prog deep 50 loop`
// stopped in hit() (hit, bottom, 51 × deep, main, libc's three: 57 frames).
func (b *bench) stack57() error {
	defer b.s.finish()
	keys := []string{"stack57.warm", "stack57.afterStop", "stack57.stopToStack"}
	_, thread, err := b.s.startStopped(b.prog, "deep", "50", "loop")
	if err != nil {
		return b.outcome(na("starting agent_prog deep 50 loop: %v", err), keys...)
	}
	if _, err := b.s.addBreakpoint(map[string]any{"Location": "hit"}); err != nil {
		return b.outcome(na("breakpoint on hit: %v", err), keys...)
	}
	if err := b.s.resumeToStop(thread); err != nil {
		return b.outcome(na("running to hit: %v", err), keys...)
	}
	st, err := b.stackRound(thread, true, nil)
	if err != nil {
		return b.outcome(err, keys...)
	}
	note := st.String()
	if len(st.names) != 57 || st.names[0] != "hit" || st.names[53] != "main" {
		b.out.info("stack57: not the expected stack: %s: %s", note, strings.Join(st.names, " "))
	}
	var warm, after waveTimes
	ss, err := b.repeat(func(smp *sample) error {
		return b.timeIt(smp, 5, func() error {
			for range 5 {
				if _, err := b.stackRound(thread, false, &warm); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return b.outcome(err, keys...)
	}
	b.out.figure(figure{key: keys[0], label: "57-frame stack round, warm", unit: "ms", vals: perOp(ss, time.Millisecond), cpu: b.cpuPerOp(ss), client: clientPerOp(ss), note: note + "; " + warm.String()})
	// Each run's samples of whole cycles: the resume, the thread running to
	// the next hit() and its stop reported, and the round. What the round
	// alone does not show: work the agent does between the stop and its
	// event (or that delays the event) is the user's wait all the same.
	var cycles []*sample
	cycleOf := map[*sample]*sample{}
	ss, err = b.repeat(func(smp *sample) error {
		cyc := cycleOf[smp]
		if cyc == nil {
			cyc = &sample{}
			cycleOf[smp] = cyc
			cycles = append(cycles, cyc)
		}
		return b.timeIt(cyc, 1, func() error {
			if err := b.s.resumeToStop(thread); err != nil { // to the next hit(): same depth
				return err
			}
			return b.timeIt(smp, 1, func() error {
				_, err := b.stackRound(thread, false, &after)
				return err
			})
		})
	})
	if err != nil {
		return b.outcome(err, keys[1:]...)
	}
	b.out.figure(figure{key: keys[1], label: "57-frame stack round, after a stop", unit: "ms", vals: perOp(ss, time.Millisecond), cpu: b.cpuPerOp(ss), client: clientPerOp(ss), note: "the stop is not timed; " + after.String()})
	whole := make([]sample, len(cycles))
	for i, c := range cycles {
		whole[i] = *c
	}
	b.out.figure(figure{key: keys[2], label: "resume, stop at a breakpoint, 57-frame stack round", unit: "ms", vals: perOp(whole, time.Millisecond), cpu: b.cpuPerOp(whole), client: clientPerOp(whole), note: "from the resume command to the round's last reply"})
	return nil
}

// stackResult is what a round found (detailed rounds only).
type stackResult struct {
	names []string
	named int // frames with a function name
	lines int // frames with a line
}

func (r stackResult) String() string {
	return fmt.Sprintf("%d frames, %d named, %d with lines", len(r.names), r.named, r.lines)
}

// waveTimes are the durations of each wave of stack rounds (see stackRound),
// to tell where a round's time goes.
type waveTimes [4][]float64

var waveNames = [4]string{"getChildren", "getContext", "findByAddr+mapToSource", "Symbols.getContext"}

// add records one round's waves, from the times each ended (t[0] = start).
func (w *waveTimes) add(t [5]time.Time) {
	for i := range w {
		w[i] = append(w[i], float64(t[i+1].Sub(t[i]))/float64(time.Microsecond))
	}
}

func (w *waveTimes) String() string {
	var parts []string
	for i, name := range waveNames {
		if len(w[i]) > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", name, median(w[i])))
		}
	}
	return "median µs per wave: " + strings.Join(parts, ", ")
}

// stackRound is one client's stack request round, as BenchmarkStack57 in
// tcf/services issues it, in four waves: getChildren; getContext of all
// frames; Symbols.findByAddr and LineNumbers.mapToSource per frame (IP-1 for
// callers); Symbols.getContext per symbol; each wave pipelined. Only what
// the next wave needs is decoded, unless detail is set. With waves set, the
// time of each wave is added to it.
func (b *bench) stackRound(thread string, detail bool, waves *waveTimes) (stackResult, error) {
	var t [5]time.Time
	t[0] = time.Now()
	c := b.s.c
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var failed error
	send := func(svc, cmd string, args ...any) *client.Pending {
		p, err := c.Send(svc, cmd, args...)
		if err != nil && failed == nil {
			failed = err
		}
		return p
	}
	wait := func(p *client.Pending, dst ...any) {
		if p == nil || failed != nil {
			return
		}
		r, err := p.Wait(ctx)
		if err == nil {
			err = r.Decode(dst...)
		}
		if err != nil {
			failed = err
		}
	}
	var e error
	var ids []string
	wait(send("StackTrace", "getChildren", thread), &e, &ids)
	if failed == nil && e != nil {
		return stackResult{}, na("StackTrace.getChildren: %v", e)
	}
	t[1] = time.Now()
	var frames []struct{ IP uint64 }
	wait(send("StackTrace", "getContext", ids), &frames, &e)
	if failed != nil {
		return stackResult{}, failed
	}
	t[2] = time.Now()
	// getChildren is bottom-first: the top frame is last.
	slices.Reverse(frames)
	syms := make([]*client.Pending, len(frames))
	lines := make([]*client.Pending, len(frames))
	for i, f := range frames {
		ip := f.IP
		if i > 0 && ip > 0 {
			ip--
		}
		syms[i] = send("Symbols", "findByAddr", thread, ip)
		lines[i] = send("LineNumbers", "mapToSource", thread, ip, ip+1)
	}
	var res stackResult
	props := make([]*client.Pending, len(frames))
	for i := range frames {
		var id string
		wait(syms[i], &e, &id)
		if detail {
			var areas []struct{ SLine int }
			wait(lines[i], &e, &areas)
			if e == nil && len(areas) > 0 && areas[0].SLine > 0 {
				res.lines++
			}
		} else {
			wait(lines[i], &e, nil)
		}
		if i == 0 {
			// A wave ends when its first reply comes: the next one starts
			// then (its first request is sent), and the rest of the
			// replies stream in behind.
			t[3] = time.Now()
		}
		props[i] = send("Symbols", "getContext", id)
	}
	res.names = make([]string, len(frames))
	for i := range frames {
		var p struct{ Name string }
		wait(props[i], &e, &p)
		res.names[i] = p.Name
		if p.Name != "" {
			res.named++
		}
	}
	t[4] = time.Now()
	if waves != nil && failed == nil && len(frames) > 0 {
		waves.add(t)
	}
	return res, failed
}
