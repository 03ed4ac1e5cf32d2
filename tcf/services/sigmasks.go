package services

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// Signal sets on the wire. The C agent reads a set (Processes.setSignalMask's
// arguments, ProcessesV1.start's SigDontStop and SigDontPass) in either of
// two forms: a number whose bit n is signal n, or an array of signal
// numbers; null means "the default" (don't-stop SIGCHLD, SIGPIPE and
// SIGWINCH; don't-pass empty). sonde reads them the same way.
//
// sonde adds a third set, pass-if-handled (target's SetPassHandled): a
// signal in it passes without a stop when the program catches or ignores it
// at the moment it arrives, and stops as any other when it would kill the
// program — how gdb and lldb treat signals, so a crash is still seen where it
// happens while SIGUSR1 handlers, SIGALRM timers and the like run freely.
// A client sets it with ProcessesV1.start's SigPassHandled or with a fourth
// argument of setSignalMask (getCapabilities says SigPassHandled: true);
// the C agent has no such set, and without it sonde behaves as the C agent
// does.

// sigMasks are the signal sets a request gives; nil where it gives none
// (the set keeps its value) and the default where it gives null.
type sigMasks struct {
	dontStop, dontPass, passHandled *target.SignalSet
}

// startSigMasks reads ProcessesV1.start's SigDontStop, SigDontPass and
// SigPassHandled properties.
func startSigMasks(props tcf.Props) (sigMasks, error) {
	var m sigMasks
	for _, f := range []struct {
		key string
		to  **target.SignalSet
		def target.SignalSet
	}{
		{"SigDontStop", &m.dontStop, target.DefaultDontStop},
		{"SigDontPass", &m.dontPass, 0},
		{"SigPassHandled", &m.passHandled, 0},
	} {
		v, ok := props[f.key]
		if !ok {
			continue
		}
		s, err := parseSigSet(f.key, v, f.def)
		if err != nil {
			return m, err
		}
		*f.to = &s
	}
	return m, nil
}

// rawSigSet decodes one setSignalMask argument (nil for null: def).
func rawSigSet(what string, raw json.RawMessage, def target.SignalSet) (target.SignalSet, error) {
	if raw == nil {
		return def, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return 0, tcf.Errorf(tcf.CodeProtocol, "%s: %v", what, err)
	}
	return parseSigSet(what, v, def)
}

// parseSigSet decodes a decoded JSON signal set: null gives def, a number
// its bits (bit n is signal n; bit 0 and bits past 64 name no signal and are
// dropped, as the C agent drops them), an array its signal numbers (each
// 1..64).
func parseSigSet(what string, v any, def target.SignalSet) (target.SignalSet, error) {
	switch v := v.(type) {
	case nil:
		return def, nil
	case json.Number:
		bits, ok := tcf.Props{"v": v}.Uint64("v")
		if !ok {
			return 0, tcf.Errorf(tcf.CodeProtocol, "%s: %s is not a signal bit mask", what, v)
		}
		return targetMask(bits), nil
	case []any:
		var s target.SignalSet
		for i, x := range v {
			n, ok := x.(json.Number)
			sig, err := n.Int64()
			if !ok || err != nil || sig < 1 || sig > 64 {
				return 0, tcf.Errorf(tcf.CodeProtocol, "%s[%d]: %v is not a signal number (1..64)", what, i, x)
			}
			s = s.With(target.Signal(sig))
		}
		return s, nil
	}
	return 0, tcf.Errorf(tcf.CodeProtocol, "%s: a signal set is a bit mask or an array of signal numbers, not %s", what, jsonKind(v))
}

// jsonKind names a decoded JSON value's type for an error message.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// apply sets proc's signal sets that m gives, keeping the others.
func (m sigMasks) apply(proc *target.Context) {
	if m.dontStop != nil || m.dontPass != nil {
		ds, dp := proc.DontStop(), proc.DontPass()
		if m.dontStop != nil {
			ds = *m.dontStop
		}
		if m.dontPass != nil {
			dp = *m.dontPass
		}
		proc.SetSignalMasks(ds, dp)
	}
	if m.passHandled != nil {
		proc.SetPassHandled(*m.passHandled)
	}
}

// sigSetArg is rawSigSet for one of several arguments: it does nothing
// once an earlier one failed (prev), so the first error is the one reported.
func sigSetArg(what string, raw json.RawMessage, def target.SignalSet, prev error) (*target.SignalSet, error) {
	if prev != nil {
		return nil, prev
	}
	s, err := rawSigSet(what, raw, def)
	if err != nil {
		return nil, err
	}
	return &s, nil
}
