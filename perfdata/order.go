package perfdata

import (
	"io"
	"slices"
)

// Sorter hands out a Reader's records in time order, as perf's own tools
// process them. perf writes each CPU's ring buffer in turn, so a mapping
// made on one CPU may be written after a sample another CPU took later; a
// FINISHED_ROUND record says every buffer was drained once. perf's rule,
// followed here: at the end of round n+1, every record up to the latest time
// of round n has arrived and may go out in order.
type Sorter struct {
	r        *Reader
	pending  []pendingRecord // records not yet handed out, sorted up to ready
	ready    int             // pending[:ready] may be handed out
	next     int             // pending[next] is the next to hand out
	seq      int
	lastTime uint64 // time of the latest record read (for records without one)
	roundMax uint64 // latest time in the round being read
	prevMax  uint64 // latest time in the previous round
	bytes    int    // bytes held in pending
	limit    int
	eof      bool
	// lazy: Next decodes only a sample's event, pid, tid and time
	// (SetLazySamples).
	lazy bool
	// Bodies of pending records live in arena chunks; a chunk is reused
	// once every record in it went out (and the last one handed out is
	// no longer in use), so a recording costs a few chunks, not an
	// allocation per record, and memory stays bounded by what is pending.
	cur     *arena
	free    []*arena
	lastOut *arena
	// lastChunk is the chunk of the record Next returned last, which the
	// Sorter keeps until the next call.
	lastChunk *Chunk
}

type arena struct {
	buf  []byte
	live int
}

const arenaChunk = 4 << 20

// maxPending bounds the records waiting to go out (their references, when
// the records stay in the input's memory and cost no bytes here).
const maxPending = 1 << 20

// keep copies a record's body into the current arena chunk.
func (s *Sorter) keep(b []byte) ([]byte, *arena) {
	if s.cur == nil || cap(s.cur.buf)-len(s.cur.buf) < len(b) {
		old := s.cur
		if k := len(s.free); k > 0 && len(b) <= arenaChunk {
			s.cur, s.free = s.free[k-1], s.free[:k-1]
			s.cur.buf = s.cur.buf[:0]
		} else {
			s.cur = &arena{buf: make([]byte, 0, max(arenaChunk, len(b)))}
		}
		s.release(old)
	}
	a := s.cur
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	a.live++
	return a.buf[start:len(a.buf):len(a.buf)], a
}

// release puts a chunk no pending record uses back on the free list.
func (s *Sorter) release(a *arena) {
	if a != nil && a.live == 0 && a != s.cur && a != s.lastOut && cap(a.buf) == arenaChunk && len(s.free) < 8 {
		s.free = append(s.free, a)
	}
}

type pendingRecord struct {
	time  uint64
	seq   int
	typ   uint32
	misc  uint16
	off   int64
	body  []byte
	arena *arena // the arena chunk holding body's copy, if any
	chunk *Chunk // the input chunk holding body (retained), if any
}

// NewSorter orders r's records, holding at most limit bytes of records
// (when a recording's rounds need more, the oldest go out early, as perf
// does when its queue is full). limit <= 0 means 256 MiB.
func NewSorter(r *Reader, limit int) *Sorter {
	if limit <= 0 {
		limit = 256 << 20
	}
	r.timeOnly = true
	return &Sorter{r: r, limit: limit}
}

// SetLazySamples makes Next decode only the event, pid, tid and time of a
// sample (Sample.Attr, PID, TID, Time): the caller decodes the rest with
// DecodeSample from the record's Body, on another goroutine if it retains
// the record's Chunk (or copies the Body when the record is not InPlace).
func (s *Sorter) SetLazySamples(lazy bool) { s.lazy = lazy }

// Next returns the next record in time order, or io.EOF. Like Reader.Next,
// the record is valid until the next call.
func (s *Sorter) Next() (*Record, error) {
	for s.next >= s.ready {
		if s.eof {
			return nil, io.EOF
		}
		if err := s.fill(); err != nil {
			return nil, err
		}
	}
	p := &s.pending[s.next]
	s.next++
	if p.arena != nil || p.chunk != nil {
		s.bytes -= len(p.body)
	}
	if p.arena != nil {
		prev := s.lastOut
		s.lastOut = p.arena
		p.arena.live--
		s.release(prev)
	}
	if s.lastChunk != nil {
		s.lastChunk.Release()
	}
	s.lastChunk = p.chunk
	inPlace := p.arena == nil
	if isHeaderRecord(p.typ) {
		// Decoded once when read: decoding again would add its attr or
		// feature to the header twice.
		s.r.rec = Record{Type: p.typ, Misc: p.misc, Offset: p.off, Body: p.body, InPlace: inPlace, Chunk: p.chunk}
		return &s.r.rec, nil
	}
	if p.typ == RecordSample && s.lazy {
		rec := &s.r.rec
		rec.Type, rec.Misc, rec.Offset, rec.Body, rec.ID = p.typ, p.misc, p.off, p.body, SampleIDTrailer{}
		s.r.sampleIDs(p.body)
		rec.InPlace, rec.Chunk, rec.Lazy = inPlace, p.chunk, true
		return rec, nil
	}
	s.r.timeOnly = false
	err := s.r.decode(p.typ, p.misc, p.body, p.off)
	s.r.timeOnly = true
	if err != nil {
		return nil, err
	}
	s.r.rec.InPlace, s.r.rec.Chunk = inPlace, p.chunk
	return &s.r.rec, nil
}

// fill reads up to the next round's end and decides what may go out.
func (s *Sorter) fill() error {
	// Drop what went out.
	s.pending = append(s.pending[:0], s.pending[s.next:]...)
	s.next, s.ready = 0, 0
	for {
		rec, err := s.r.Next()
		if err == io.EOF {
			s.eof = true
			s.sort()
			s.ready = len(s.pending)
			return nil
		}
		if err != nil {
			return err
		}
		if rec.Type == RecordFinishedRound {
			s.sort()
			s.ready = s.upTo(s.prevMax)
			s.prevMax, s.roundMax = s.roundMax, 0
			if s.ready > 0 {
				return nil
			}
			continue
		}
		t := recordTime(rec)
		if t == 0 {
			t = s.lastTime
		}
		s.lastTime = t
		s.roundMax = max(s.roundMax, t)
		// A record in the input's own memory is kept where it is: only
		// its reference waits here, not a copy of its 8 KiB stack (a
		// chunk's bytes count against the limit: they are held for it).
		body, a, c := rec.Body, (*arena)(nil), rec.Chunk
		switch {
		case c != nil:
			c.Retain()
			s.bytes += len(rec.Body)
		case !rec.InPlace:
			body, a = s.keep(rec.Body)
			s.bytes += len(rec.Body)
		}
		s.pending = append(s.pending, pendingRecord{time: t, seq: s.seq, typ: rec.Type, misc: rec.Misc, off: rec.Offset, body: body, arena: a, chunk: c})
		s.seq++
		if s.bytes > s.limit || len(s.pending) > maxPending {
			s.sort()
			s.ready = len(s.pending) / 2
			return nil
		}
	}
}

func (s *Sorter) sort() {
	// A round is mostly in order already (one ring buffer's records, or
	// one per CPU, each in time order): checking it costs a pass, where
	// the stable sort's merges compared (and copied) its records
	// n log n times, 3% of a large recording's CPU.
	if s.sorted() {
		return
	}
	slices.SortStableFunc(s.pending, func(a, b pendingRecord) int {
		if a.time != b.time {
			if a.time < b.time {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
}

// sorted reports whether pending is in (time, seq) order. seq grows as
// records are read, so records of equal time out of seq order are rare;
// they count as unsorted.
func (s *Sorter) sorted() bool {
	p := s.pending
	for i := 1; i < len(p); i++ {
		if a, b := &p[i-1], &p[i]; a.time > b.time || (a.time == b.time && a.seq > b.seq) {
			return false
		}
	}
	return true
}

// upTo counts the sorted pending records at or before t.
func (s *Sorter) upTo(t uint64) int {
	i, _ := slices.BinarySearchFunc(s.pending, t+1, func(p pendingRecord, t uint64) int {
		if p.time < t {
			return -1
		}
		return 1
	})
	return i
}

// recordTime is a record's timestamp, 0 when it has none.
func recordTime(rec *Record) uint64 {
	if rec.Type == RecordSample {
		if rec.Sample.Attr != nil && rec.Sample.Attr.SampleType&SampleTime != 0 {
			return rec.Sample.Time
		}
		return 0
	}
	if rec.Type == RecordFork || rec.Type == RecordExit {
		return rec.Task.Time
	}
	if rec.ID.Valid {
		return rec.ID.Time
	}
	return 0
}

func isHeaderRecord(typ uint32) bool {
	switch typ {
	case RecordHeaderAttr, RecordHeaderFeature, RecordHeaderBuildID, RecordHeaderEventType, RecordHeaderTracingData:
		return true
	}
	return false
}
