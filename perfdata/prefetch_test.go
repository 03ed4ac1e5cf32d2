package perfdata

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// dwarfSamples builds n sample bodies laid out as `perf record
// --call-graph dwarf` writes them (ip, tid, time, period, a user callchain,
// 17 user registers, an 8 KiB stack copy), back to back in one buffer.
func dwarfSamples(n int) (*Attr, [][]byte) {
	a := &Attr{
		SampleType:      SampleIP | SampleTID | SampleTime | SamplePeriod | SampleCallchain | SampleRegsUser | SampleStackUser,
		SampleRegsUser:  0xff0fff,
		SampleStackUser: 8192,
	}
	var one []byte
	u64 := func(v uint64) { one = binary.LittleEndian.AppendUint64(one, v) }
	u64(0x401000)    // ip
	u64(7<<32 | 7)   // pid, tid
	u64(1000)        // time
	u64(250000)      // period
	u64(2)           // callchain: context, ip
	u64(ContextUser) //
	u64(0x401000)    //
	u64(2)           // regs abi
	for i := 0; i < 20; i++ {
		u64(uint64(0x7ffc0000 + i))
	}
	u64(8192) // stack size
	one = append(one, make([]byte, 8192)...)
	u64(1024) // dyn size
	buf := bytes.Repeat(one, n)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = buf[i*len(one) : (i+1)*len(one)]
	}
	return a, bodies
}

func TestPrefetchChangesNothing(t *testing.T) {
	a, bodies := dwarfSamples(3)
	want := bytes.Clone(bodies[0])
	for _, n := range []int{0, 1, 63, 64, 65, 1023, 1024, 1025, len(bodies[0])} {
		Prefetch(bodies[0][:n])
		Prefetch(bodies[0][len(bodies[0])-n:])
	}
	Prefetch(nil)
	if !bytes.Equal(bodies[0], want) {
		t.Fatal("Prefetch changed the bytes")
	}
	var s Sample
	if err := DecodeSample(a, bodies[1], 0, &s); err != nil {
		t.Fatal(err)
	}
	if s.PID != 7 || len(s.Regs) != 20 || len(s.Stack) != 1024 || len(s.Callchain) != 2 {
		t.Fatalf("decoded %+v", s)
	}
}

// BenchmarkDecodeSampleCold decodes samples of a buffer larger than the
// caches, one after another, as a worker meets records another core read:
// every record's first touch misses, unless it was prefetched one ahead.
// Between two decodes it does ~0.3 µs of arithmetic (the unwind and naming
// of a sample), the time a prefetch has to arrive.
func BenchmarkDecodeSampleCold(b *testing.B) {
	a, bodies := dwarfSamples(8192) // 68 MB
	for _, ahead := range []bool{false, true} {
		name := "plain"
		if ahead {
			name = "prefetched"
		}
		b.Run(name, func(b *testing.B) {
			var s Sample
			var sum uint64
			for i := 0; i < b.N; i++ {
				k := i % len(bodies)
				if ahead && k+1 < len(bodies) {
					Prefetch(bodies[k+1])
				}
				if err := DecodeSample(a, bodies[k], 0, &s); err != nil {
					b.Fatal(err)
				}
				sum += s.Regs[len(s.Regs)-1] + uint64(s.Stack[0])
				sum = busy(sum)
			}
			if sum == 1 {
				b.Log(sum)
			}
		})
	}
}

// busy is ~0.3 µs of dependent arithmetic.
func busy(x uint64) uint64 {
	for i := 0; i < 300; i++ {
		x = x*0x9e3779b97f4a7c15 + uint64(i)
	}
	return x
}
