package profiling

import (
	"fmt"
	"testing"
)

// tally counts what a comparison with perf looks at (samples, frames,
// threads) and how many of them are alike, keeping the first differences
// to show: the one shape of every "N of M samples as perf has them" test.
type tally struct {
	n, same int
	diffs   []string
	keep    int // differences kept: 5 unless set
}

// add counts one item, alike or not; diff describes a difference and is
// called only for those kept.
func (c *tally) add(alike bool, diff func() string) {
	c.n++
	if alike {
		c.same++
		return
	}
	keep := c.keep
	if keep == 0 {
		keep = 5
	}
	if len(c.diffs) < keep {
		c.diffs = append(c.diffs, diff())
	}
}

// log logs "same of n what" and the differences kept.
func (c *tally) log(t *testing.T, what string) {
	t.Helper()
	t.Logf("%d of %d %s", c.same, c.n, what)
	for _, d := range c.diffs {
		t.Log(d)
	}
}

// atLeast reports whether there was something to compare and percent of
// it was alike.
func (c *tally) atLeast(percent int) bool { return c.n > 0 && c.same >= c.n*percent/100 }

// String is "same of n".
func (c *tally) String() string { return fmt.Sprintf("%d of %d", c.same, c.n) }
