// Package profiling turns samples into stacks people read: it follows each
// process's address space through a recording (mappings, fork, exec), unwinds
// every sample's user stack copy with CFI through the same engine `sonde
// stack` uses (frame pointers where a file has no CFI), names frames with
// their inline chains and source lines, and aggregates them into the outputs
// profiler users open: folded stacks (flame graphs, speedscope), pprof, a
// perf-script-like listing and a top-functions report.
//
// It sits above perfdata (what a recording says), unwind/snapshot (a sample
// is registers plus a stack copy over the mapped files: the libipt image
// with the sampled bytes as the fallback, walked by the uwx engine) and
// symbols.
package profiling
