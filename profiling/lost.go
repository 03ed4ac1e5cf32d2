package profiling

import "github.com/sondedbg/sonde/perfdata"

// lostCounts keeps the two ways a recording says samples were dropped
// apart: the kernel's LOST records (its ring buffer was full) and
// LOST_SAMPLES records. perf record (6.0 and later) ends a recording with
// LOST_SAMPLES records that sum each event's lost count as the kernel keeps
// it: the same losses its LOST records told, again. perf report keeps the two
// apart and its "LOST_SAMPLES events" of an event equals the LOST records'
// sum; adding them counted every lost sample twice (zstd -e page-faults -c 1:
// 3,554 for perf's 1,777). The samples lost are the larger of the two sums.
type lostCounts struct{ ring, samples uint64 }

func (l *lostCounts) count(rec *perfdata.Record, total *uint64) {
	if rec.Type == perfdata.RecordLost {
		l.ring += rec.Lost.Lost
	} else {
		l.samples += rec.Lost.Lost
	}
	*total = max(l.ring, l.samples)
}
