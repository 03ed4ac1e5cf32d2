package services

import (
	"encoding/json"
	"testing"
)

// appendFrameProps must write what encoding/json writes for frameProps (it
// replaced it): clients parse these objects, and golden replies hold them.
func TestAppendFramePropsMatchesEncodingJSON(t *testing.T) {
	for _, p := range []frameProps{
		{},
		{ID: "FP0.P1.1", ParentID: "P1.1", ProcessID: "P1", TopFrame: true, Walk: true, IP: 0x401000, FP: 0x7ffc0000},
		{ID: "FP56.P99.100", ParentID: "P99.100", ProcessID: "P99", Index: 56, Level: 0, IP: 1<<64 - 1, RP: 1, Inlined: true},
		{ID: "x\"\\\n\x01é", Index: -1, Level: 1 << 40, FP: 1 << 63},
	} {
		want, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendFrameProps(nil, &p); string(got) != string(want) {
			t.Errorf("appendFrameProps:\n got %s\nwant %s", got, want)
		}
	}
}
