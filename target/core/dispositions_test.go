package core

import (
	"errors"
	"testing"

	"github.com/sondedbg/sonde/target"
)

// TestCoreHasNoDispositions: a core records no signal handlers, so the
// model says it does not know rather than "none caught".
func TestCoreHasNoDispositions(t *testing.T) {
	corePath, _, _ := synthetic(t, sameHead)
	_, c := openCore(t, corePath, Options{})
	d, err := c.Process().SignalDispositions()
	var te *target.Error
	if !errors.As(err, &te) || te.Code != target.CodeUnsupported {
		t.Fatalf("dispositions of a core: %+v, %v; want CodeUnsupported", d, err)
	}
}
