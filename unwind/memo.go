package unwind

// Reusing the frames of the previous walk (Options.ReuseFrames).
//
// A debugger walks a thread's stack at every stop, and most stops leave the
// outer frames as they were: a breakpoint in a loop stops at the same depth
// again and again, a single step changes frame 0 only. A step of the walk
// is a function of the frame it starts from (pc, sp, registers), the target
// memory it reads and the modules the client reports. So the Unwinder keeps
// a record of its last complete walk: each physical frame, and every read
// each step made with the bytes it got. In the next walk, as soon as a
// fresh step yields a caller identical to a recorded frame (same pc, stack
// pointer and registers, after a frame with the same CFA), it reads again
// what the recorded walk read from there on; when every byte is the same,
// the rest of the walk is the recorded one, symbols included, and is
// replayed instead of unwound.

import "encoding/binary"

// walkRecord is one walk's frames and reads.
type walkRecord struct {
	frames []Frame // the physical frames, as prepared
	// stepStart[k] is the index in reads of the first read of frame k's
	// step (the one that found its caller); a complete walk has one more
	// entry, len(reads).
	stepStart []int32
	reads     []memRead
	data      []byte // the bytes of reads
	stop      StopReason
	err       error
	complete  bool // the walk ran to its end

	// The frames Backtrace made of this walk (symbols and inline frames),
	// tracePhys[k] the index of physical frame k's first; traced is false
	// when the walk was not a Backtrace.
	trace     []StackFrame
	tracePhys []int32
	traceOpts BacktraceOptions
	traced    bool
}

// memRead is one read the walk made: want bytes at addr, of which got could
// be read (data[off:off+got]).
type memRead struct {
	addr      uint64
	want, got uint32
	off       uint32
}

// reset empties r for a new walk, keeping its buffers.
func (r *walkRecord) reset() {
	r.frames, r.stepStart, r.reads, r.data = r.frames[:0], r.stepStart[:0], r.reads[:0], r.data[:0]
	r.stop, r.err, r.complete = StopNone, nil, false
	clear(r.trace) // hold no strings (what lies beyond was cleared before)
	r.trace, r.tracePhys, r.traced = r.trace[:0], r.tracePhys[:0], false
}

// A walk that reads more bytes than maxRecordedData or has more frames than
// maxRecordedFrames is not recorded: a record is kept per thread, and these
// bound it (~0.5 MB with its trace).
const (
	maxRecordedData   = 128 << 10
	maxRecordedFrames = 1024
)

// logRead records a read of the walk in progress.
func (u *Unwinder) logRead(addr uint64, want int, got []byte) {
	r := &u.rec
	if u.recOff || len(r.data)+len(got) > maxRecordedData {
		u.recOff = true
		return
	}
	r.reads = append(r.reads, memRead{addr: addr, want: uint32(want), got: uint32(len(got)), off: uint32(len(r.data))})
	r.data = append(r.data, got...)
}

// relog records again reads a recorded step made (their bytes, in data,
// follow each other), at once.
func (u *Unwinder) relog(reads []memRead, data []byte) {
	if len(reads) == 0 {
		return
	}
	r := &u.rec
	first, end := reads[0].off, reads[len(reads)-1].off+reads[len(reads)-1].got
	if u.recOff || len(r.data)+int(end-first) > maxRecordedData {
		u.recOff = true
		return
	}
	at := len(r.reads)
	delta := uint32(len(r.data)) - first
	r.reads = append(r.reads, reads...)
	for i := at; i < len(r.reads); i++ {
		r.reads[i].off += delta
	}
	r.data = append(r.data, data[first:end]...)
}

// recordStep notes that frame u.frame's step starts (prepare).
func (u *Unwinder) recordStep() {
	if u.opts.ReuseFrames && !u.recOff {
		u.rec.stepStart = append(u.rec.stepStart, int32(len(u.rec.reads)))
	}
}

// recordFrame notes the prepared u.frame, and the end of the walk when it
// has no caller.
func (u *Unwinder) recordFrame() {
	if !u.opts.ReuseFrames {
		return
	}
	r := &u.rec
	if len(r.frames) >= maxRecordedFrames {
		u.recOff = true
	} else {
		r.frames = append(r.frames, u.frame)
	}
	if !u.hasNext {
		r.stepStart = append(r.stepStart, int32(len(r.reads)))
		r.stop, r.err, r.complete = u.stop, u.err, !u.recOff
	}
}

// Forget drops the record of the last walk (Options.ReuseFrames): the
// client's modules changed, so the next walk must not reuse its frames.
func (u *Unwinder) Forget() {
	for _, r := range []*walkRecord{&u.last, &u.rec} {
		r.reset()
		clear(r.frames[:cap(r.frames)]) // nor the modules
	}
}

// Reused is the number of physical frames the current walk took from the
// previous one instead of unwinding them (Options.ReuseFrames).
func (u *Unwinder) Reused() int { return u.reused }

// startWalk begins a walk: the record of the one before becomes the one
// to reuse if it ran to its end.
func (u *Unwinder) startWalk() {
	u.replay, u.reused, u.recOff, u.frameReplayed = -1, 0, false, false
	u.noReuseBelow = 0
	if !u.opts.ReuseFrames {
		return
	}
	if u.rec.complete {
		u.last, u.rec = u.rec, u.last
	}
	u.rec.reset()
}

// sameStart reports whether a step from f starts where the recorded frame
// g's did: the same pc, stack pointer, exactness and registers (a frame's
// kind and CFA are found by its step).
func sameStart(f, g *Frame) bool {
	return f.PC == g.PC && f.SP == g.SP && f.Exact == g.Exact && f.Regs.Known == g.Regs.Known &&
		f.Regs.Values == g.Regs.Values
}

// tryReuse runs once prepare found u.next: if the last walk had a frame
// that starts as u.next does and everything it read from there is
// unchanged, the rest of this walk replays it.
func (u *Unwinder) tryReuse() {
	last := &u.last
	if !last.complete || u.replay >= 0 {
		return
	}
	i := u.findRecorded(&u.next)
	if i < 1 || i < u.noReuseBelow {
		return
	}
	// prepare's checks of frame i compare its CFA with the one below it:
	// the same frame below, the same outcome.
	below := &last.frames[i-1]
	if below.CFA != u.frame.CFA || (below.Kind == KindSignal) != (u.frame.Kind == KindSignal) {
		return
	}
	m := len(last.frames) - 1
	shift := u.depth + 1 - i
	if shift != 0 && (last.stop == StopDepthLimit || m+shift+1 >= u.opts.MaxDepth) {
		return
	}
	if bad := u.changedRead(int(last.stepStart[i])); bad >= 0 {
		// Frames up to the step that read it cannot be reused.
		for k := i; k <= m; k++ {
			if int(last.stepStart[k+1]) > bad {
				u.noReuseBelow = k + 1
				break
			}
		}
		return
	}
	u.replay, u.replayShift = i, shift // Step takes the frames from last, not u.next
}

// findRecorded returns the index of the recorded frame whose step starts
// as f's, or -1. Callers' stack pointers grow along a walk: a binary
// search finds the candidate.
func (u *Unwinder) findRecorded(f *Frame) int {
	fr := u.last.frames
	lo, hi := 0, len(fr)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if fr[mid].SP < f.SP {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for k := lo; k < len(fr) && fr[k].SP == f.SP; k++ {
		if sameStart(f, &fr[k]) {
			return k
		}
	}
	return -1
}

// changedRead reads again the recorded reads from index from on and
// returns the index of the first whose bytes differ now, or -1.
func (u *Unwinder) changedRead(from int) int {
	last := &u.last
	view, _ := u.mem.(MemoryView)
	for k := from; k < len(last.reads); k++ {
		r := &last.reads[k]
		if view != nil {
			// In the client's buffer: compared in place.
			if b := view.ViewMemory(r.addr, int(r.want)); b != nil {
				if len(b) == 8 && r.got == 8 {
					// A saved register or return address: one
					// word, compared without memequal's call.
					if binary.LittleEndian.Uint64(b) != binary.LittleEndian.Uint64(last.data[r.off:r.off+8]) {
						return k
					}
					continue
				}
				if r.got != r.want || string(b) != string(last.data[r.off:r.off+r.got]) {
					return k
				}
				continue
			}
		}
		if cap(u.verify) < int(r.want) {
			u.verify = make([]byte, r.want)
		}
		buf := u.verify[:r.want]
		n, _ := u.mem.ReadMemory(buf, r.addr)
		if n < 0 || n > len(buf) {
			n = 0
		}
		if uint32(n) != r.got || string(buf[:n]) != string(last.data[r.off:r.off+r.got]) {
			return k
		}
	}
	return -1
}

// stepReplay moves to the next recorded frame of a replay (Step).
func (u *Unwinder) stepReplay() {
	last := &u.last
	k := u.replay
	u.frame = last.frames[k]
	u.frameReplayed = true
	// The reads of this step belong to the new record too.
	u.recordStep()
	u.relog(last.reads[last.stepStart[k]:last.stepStart[k+1]], last.data)
	u.reused++
	if k+1 < len(last.frames) {
		u.replay = k + 1
		u.hasNext = true
	} else {
		u.replay = len(last.frames)
		u.hasNext = false
		u.stop, u.err = last.stop, last.err
		if se, ok := u.err.(*StepError); ok && u.replayShift != 0 {
			moved := *se
			moved.Depth += u.replayShift
			u.err = &moved
		}
	}
	u.recordFrame()
}

// ReplayRest returns, when the rest of the walk replays the last one
// (Options.ReuseFrames: Step would take the next frames from it), those
// frames at once, and ends the walk as calling Step until it returns false
// would: Frame is then the last of them, StopReason and Err the recorded
// walk's. Otherwise it returns nil and the walk goes on with Step. The
// frames are the recorded ones, valid until the next Init; a profiler
// takes a sample's outer frames this way, without a step per frame.
func (u *Unwinder) ReplayRest() []Frame {
	last := &u.last
	k0 := u.replay
	if !u.hasNext || k0 < 0 || k0 >= len(last.frames) {
		return nil
	}
	m := len(last.frames) - 1
	n := m - k0 + 1
	r := &u.rec
	reads := last.reads[last.stepStart[k0]:last.stepStart[m+1]]
	var data int
	if len(reads) > 0 {
		data = int(reads[len(reads)-1].off + reads[len(reads)-1].got - reads[0].off)
	}
	if u.recOff || len(r.frames)+n > maxRecordedFrames || len(r.data)+data > maxRecordedData {
		// The record stops on the way: Step by Step, as it knows how.
		return nil
	}
	// What stepReplay does for each frame, at once: the steps' starts,
	// their reads, the frames.
	base := int32(len(r.reads)) - last.stepStart[k0]
	for k := k0; k <= m; k++ {
		r.stepStart = append(r.stepStart, last.stepStart[k]+base)
	}
	u.relog(reads, last.data)
	r.frames = append(r.frames, last.frames[k0:]...)
	u.depth += n
	u.frame = last.frames[m]
	u.frameReplayed = true
	u.reused += n
	u.replay = len(last.frames)
	u.hasNext = false
	u.stop, u.err = last.stop, last.err
	if se, ok := u.err.(*StepError); ok && u.replayShift != 0 {
		moved := *se
		moved.Depth += u.replayShift
		u.err = &moved
	}
	r.stepStart = append(r.stepStart, int32(len(r.reads)))
	r.stop, r.err, r.complete = u.stop, u.err, !u.recOff
	return last.frames[k0:]
}

// replayedSymbols returns the Backtrace frames recorded for the current
// frame when it is replayed and the recorded walk was a Backtrace with the
// same options.
func (u *Unwinder) replayedSymbols(opts BacktraceOptions) ([]StackFrame, bool) {
	if !u.frameReplayed {
		return nil, false
	}
	k := u.replay - 1 // stepReplay moved on
	last := &u.last
	if k < 0 || !last.traced || last.traceOpts != opts || k+1 >= len(last.tracePhys) {
		return nil, false
	}
	return last.trace[last.tracePhys[k]:last.tracePhys[k+1]], true
}

// recordedSymbols returns the Backtrace frames the last walk made of its
// physical frame k when that frame was at the same pc of the same module
// as f, this walk's frame k: symbols depend on nothing else (a thread
// stopped again where it stopped before looks its frame 0 up again).
// Their SP and CFA are f's (Backtrace sets them).
func (u *Unwinder) recordedSymbols(opts BacktraceOptions, k int, f *Frame) ([]StackFrame, bool) {
	last := &u.last
	if !u.opts.ReuseFrames || !last.traced || last.traceOpts != opts || k+1 >= len(last.tracePhys) || k >= len(last.frames) {
		return nil, false
	}
	g := &last.frames[k]
	if g.PC != f.PC || g.Module != f.Module || g.Kind != f.Kind || g.LookupPC() != f.LookupPC() {
		return nil, false
	}
	return last.trace[last.tracePhys[k]:last.tracePhys[k+1]], true
}
