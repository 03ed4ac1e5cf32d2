package profiling

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"
)

// TestPprofValueTypes: the second value is named by the sampled event, CPU
// nanoseconds only for clock events; the period is the mean one.
func TestPprofValueTypes(t *testing.T) {
	for _, c := range []struct {
		events []string
		want   string
	}{
		{[]string{"cpu-clock:ppp", "cpu-clock:ppp"}, "cpu/nanoseconds"},
		{[]string{"task-clock"}, "cpu/nanoseconds"},
		{[]string{"cycles:P", "cycles:P"}, "cycles/count"},
		{[]string{"cycles:P", "instructions"}, "events/count"},
		{[]string{""}, "events/count"},
	} {
		pp := NewPprof()
		for i, ev := range c.events {
			pp.Add(&Sample{Comm: "x", Event: ev, Period: uint64(1000 + 2*i), Time: uint64(5000 + 100*i), Frames: []Frame{{Function: "f", Module: "/bin/x", PC: 0x1000}}})
		}
		var buf bytes.Buffer
		if err := pp.Write(&buf, nil); err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(&buf)
		if err != nil {
			t.Fatal(err)
		}
		st := p.SampleType[1]
		if got := st.Type + "/" + st.Unit; got != c.want || p.PeriodType.Type != st.Type || p.PeriodType.Unit != st.Unit {
			t.Errorf("%v: value %s, period type %s/%s, want %s", c.events, got, p.PeriodType.Type, p.PeriodType.Unit, c.want)
		}
		if want := int64(1000 + len(c.events) - 1); p.Period != want {
			t.Errorf("%v: period %d, want %d", c.events, p.Period, want)
		}
		if want := int64(100 * (len(c.events) - 1)); p.DurationNanos != want {
			t.Errorf("%v: duration %d, want %d", c.events, p.DurationNanos, want)
		}
	}
}
