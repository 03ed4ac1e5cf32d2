package services

import (
	"encoding/json"
	"testing"

	"github.com/sondedbg/sonde/target"
)

// FuzzSigSet: a signal set from a peer (setSignalMask's arguments,
// ProcessesV1.start's properties) decodes to a set or an error, never a
// panic; a decoded set written back as an array of its signal numbers
// decodes to the same set.
func FuzzSigSet(f *testing.F) {
	for _, s := range []string{`null`, `0`, `5`, `18446744073709551615`, `-1`, `1e30`, `1.5`,
		`[1,2,64]`, `[0]`, `[65]`, `[1,"x"]`, `[[]]`, `"x"`, `{}`, `true`, `[`, ``} {
		f.Add([]byte(s))
	}
	const def = target.SignalSet(1 << 17)
	f.Fuzz(func(t *testing.T, raw []byte) {
		set, err := rawSigSet("fuzz", json.RawMessage(raw), def)
		if err != nil {
			return
		}
		sigs := []int{}
		for sig := 1; sig <= 64; sig++ {
			if set.Has(target.Signal(sig)) {
				sigs = append(sigs, sig)
			}
		}
		again, err := json.Marshal(sigs)
		if err != nil {
			t.Fatal(err)
		}
		back, err := rawSigSet("fuzz", again, def)
		if err != nil || back != set {
			t.Fatalf("%q decoded to %#x; its signals %s decode to %#x, %v", raw, set, again, back, err)
		}
	})
}
