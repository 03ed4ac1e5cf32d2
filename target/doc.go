// Package target is sonde's model of a debugged program: the debug context of the
// TCF agent's context.h, in Go.
//
// A Target is one debugging session over one backend: target/ptrace for live Linux
// processes, target/core for ELF core files. It owns a tree of contexts: processes
// (containers that own a memory space, breakpoints and signal settings) and
// threads (which have a run state and registers). Contexts have stable IDs that
// TCF clients show to people: "P<pid>" and "P<pid>.<tid>".
//
// Everything above this package (the unwinder, the symbolizer, the TCF agent, the
// CLI) talks to targets only through this package. Backends implement Backend;
// they create contexts and report what happens through the Target's Backend-facing
// methods (AddProcess, AddThread, Stopped, Exited, ...), which keep the tree,
// reference counts and listeners consistent for every backend alike.
//
// Listeners receive events in the order things happened, one at a time, on a
// goroutine of their own: a listener may call back into the Target.
// Synchronous listeners (AddSyncListener) see each event first, where it is
// reported, and must not: they are for front ends that pass a stop on to a
// client without a goroutine hop.
package target
