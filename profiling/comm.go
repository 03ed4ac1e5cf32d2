package profiling

import "github.com/sondedbg/sonde/perfdata"

// Threads are named as perf names them: each by its own last COMM record
// (a thread renamed with pthread_setname_np keeps its name), a new thread by
// the thread that created it, and a thread with no name of its own by its
// process.

// threadName is a thread's own name and its process.
type threadName struct {
	pid  uint32
	name string
}

// setThreadComm records a COMM record's name for its thread.
func (b *Builder) setThreadComm(pid, tid uint32, name string) {
	if pid == tid {
		delete(b.comms, tid) // the process's name: space.comm has it
		return
	}
	if b.comms == nil {
		b.comms = map[uint32]threadName{}
	}
	b.comms[tid] = threadName{pid, name}
}

// forkThreadComm names a new thread after the thread that created it.
func (b *Builder) forkThreadComm(t perfdata.Task) {
	delete(b.comms, t.TID)
	if t.PID != t.PPID {
		return // a new process: named by its space, a copy of the parent's
	}
	if parent, ok := b.comms[t.PTID]; ok {
		b.comms[t.TID] = threadName{t.PID, parent.name}
	}
}

// dropThreadComms forgets the names of a process's threads (exec: they are
// gone, the process is named anew).
func (b *Builder) dropThreadComms(pid uint32) {
	for tid, n := range b.comms {
		if n.pid == pid {
			delete(b.comms, tid)
		}
	}
}

// threadComm is the name of thread tid of the process sp.
func (b *Builder) threadComm(tid uint32, sp *space) string {
	if n, ok := b.comms[tid]; ok {
		return n.name
	}
	return sp.comm
}
