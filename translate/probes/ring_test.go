package probes

import (
	"fmt"
	"sync"
	"testing"
)

// TestRecordRing: a recording probe writes the argument and a global at
// every hit where its condition holds into the ring buffer, which sonde
// drains while the program runs: with fewer hits than the ring holds, every
// record arrives, in the order of the hits; with far more hits than the
// drainer can keep up with, every hit is either delivered (in order) or
// counted as lost, never both, never neither. The program's output equals an
// untraced run's.
func TestRecordRing(t *testing.T) {
	for _, tc := range []struct {
		n     int
		every bool // a condition that always holds, else rdi odd-free: rdi >= n/2
	}{{RingCap - 24, true}, {200_000, false}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			path := buildProg(t, true)
			r := start(t, path, fmt.Sprint(tc.n))
			gvar, _ := r.function("gvar")
			addr, fn := r.function("ripload")
			var mu sync.Mutex
			var got [][2]uint64
			var lostCalls uint64
			var x *Expr
			from := uint64(0)
			if !tc.every {
				from = uint64(tc.n / 2)
				x = &Expr{Cmp: &Compare{Value: Value{Reg: "rdi", Size: 8, Signed: true}, Op: ">=", Const: int64(from)}}
			}
			vals := []Value{{Reg: "rdi", Size: 8, Signed: true}, {Addr: gvar, Size: 8, Signed: true}}
			p, ring, err := r.set.AddRecordIf("ripload", addr, fn, x, vals, func(v []uint64) {
				mu.Lock()
				got = append(got, [2]uint64{v[0], v[1]})
				mu.Unlock()
			}, func(n uint64) {
				mu.Lock()
				lostCalls += n
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			out := r.finish()
			if u := untraced(t, path, fmt.Sprint(tc.n)); out != u {
				t.Errorf("output %q, untraced %q", out, u)
			}
			mu.Lock()
			defer mu.Unlock()
			hits := uint64(tc.n) - from
			if p.Hits() != hits {
				t.Errorf("%d hits, want %d", p.Hits(), hits)
			}
			if uint64(len(got))+ring.Lost() != hits || lostCalls != ring.Lost() || ring.Records() != uint64(len(got)) {
				t.Fatalf("%d records + %d lost (reported %d), want %d hits", len(got), ring.Lost(), lostCalls, hits)
			}
			if tc.every && ring.Lost() != 0 {
				t.Errorf("%d records lost with a ring that holds them all", ring.Lost())
			}
			prev := int64(from) - 1
			for i, rec := range got {
				if int64(rec[0]) <= prev || rec[0] >= uint64(tc.n) || rec[1] != 7 {
					t.Fatalf("record %d: rdi %d gvar %d after rdi %d", i, rec[0], rec[1], prev)
				}
				prev = int64(rec[0])
			}
			if tc.every && prev != int64(tc.n-1) {
				t.Errorf("last record rdi %d", prev)
			}
			t.Logf("%d hits: %d records, %d lost", hits, len(got), ring.Lost())
		})
	}
}
