package perfdata

// prefetchSpan is how much of a sample's body Prefetch asks for: its fixed
// fields, callchain and user registers, and the top of its stack copy,
// where an unwind starts.
const prefetchSpan = 1024

// Prefetch asks the CPU to bring the first bytes of a sample record's body
// into its cache, for a DecodeSample (and an unwind) that follows soon on
// the same goroutine. A record is read into memory on one core and decoded
// on another, a while later: its first touch there waits for memory, ~140
// ns a sample, where a prefetch issued one sample ahead waits for nothing.
// It never faults and changes nothing.
func Prefetch(body []byte) {
	if n := min(len(body), prefetchSpan); n > 0 {
		prefetchLines(&body[0], n)
	}
}
