package profiling

import "github.com/sondedbg/sonde/perfdata"

// Event names a sample's event as perf does: the name the recording's
// event_desc gives it ("cpu-clock:ppp", "page-faults:u"), else the generic
// name of its type and config, else "" for no attr.
func eventName(a *perfdata.Attr) string {
	if a == nil {
		return ""
	}
	if a.Name != "" {
		return a.Name
	}
	var names []string
	switch a.Type {
	case 0: // PERF_TYPE_HARDWARE
		names = hardwareEvents
	case 1: // PERF_TYPE_SOFTWARE
		names = softwareEvents
	case 2:
		return "tracepoint"
	case 3:
		return "cache-event"
	case 5:
		return "breakpoint"
	}
	if a.Config < uint64(len(names)) {
		return names[a.Config]
	}
	return "raw-event"
}

// The generic event names, by config (perf's evsel.c tables).
var (
	hardwareEvents = []string{"cycles", "instructions", "cache-references", "cache-misses",
		"branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
		"stalled-cycles-backend", "ref-cycles"}
	softwareEvents = []string{"cpu-clock", "task-clock", "page-faults", "context-switches",
		"cpu-migrations", "minor-faults", "major-faults", "alignment-faults",
		"emulation-faults", "dummy", "bpf-output", "cgroup-switches"}
)
