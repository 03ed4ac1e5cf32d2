package probes

import (
	"sync"
	"time"
)

// rdtsc reads the time-stamp counter, which latency payloads read in the
// target (the same counter: same machine, constant rate on current CPUs).
func rdtsc() uint64

var tscOnce struct {
	sync.Once
	hz float64
}

// TSCHz returns the time-stamp counter's rate, measured once against the
// monotonic clock over 20 ms.
func TSCHz() float64 {
	tscOnce.Do(func() {
		t0, c0 := time.Now(), rdtsc()
		time.Sleep(20 * time.Millisecond)
		c1, t1 := rdtsc(), time.Now()
		tscOnce.hz = float64(c1-c0) / t1.Sub(t0).Seconds()
	})
	return tscOnce.hz
}
