package tcf

import "sort"

// CommandFilter is a set of commands a server refuses to run: each is
// answered with an error report (CodeUnsupported, saying why) instead of
// going to its handler. It works at dispatch, for every service, so a
// policy such as --read-only does not depend on each service remembering
// to check it.
type CommandFilter struct {
	why string
	// refuse by "Service.command"; a nil check refuses every call, else
	// the call when check returns true for its arguments.
	cmds map[string]func(args *Args) bool
	// services refused whole
	services map[string]bool
}

// NewCommandFilter returns an empty filter whose refusals give why.
func NewCommandFilter(why string) *CommandFilter {
	return &CommandFilter{why: why, cmds: map[string]func(*Args) bool{}, services: map[string]bool{}}
}

// Command refuses service.command; when check is not nil only the calls
// for whose arguments it returns true.
func (f *CommandFilter) Command(service, command string, check func(args *Args) bool) *CommandFilter {
	f.cmds[service+"."+command] = check
	return f
}

// Service refuses every command of service.
func (f *CommandFilter) Service(service string) *CommandFilter {
	f.services[service] = true
	return f
}

// Refuses reports whether the call of service.command with fields is
// refused, and the error to answer it with.
func (f *CommandFilter) Refuses(service, command string, fields []Field) error {
	if f == nil {
		return nil
	}
	if !f.services[service] {
		check, ok := f.cmds[service+"."+command]
		if !ok {
			return nil
		}
		if check != nil {
			a := NewArgs(fields)
			if !check(a) {
				return nil
			}
		}
	}
	return Errorf(CodeUnsupported, "%s.%s refused: %s", service, command, f.why)
}

// List names the refused commands and services, sorted (for logs and docs).
func (f *CommandFilter) List() []string {
	var l []string
	for k, check := range f.cmds {
		if check != nil {
			k += " (some calls)"
		}
		l = append(l, k)
	}
	for s := range f.services {
		l = append(l, s+".*")
	}
	sort.Strings(l)
	return l
}

// FileSystem.open flags that make an open a write (TCF's FileSystem
// specification: READ 1, WRITE 2, APPEND 4, CREAT 8, TRUNC 16, EXCL 32).
const fsWriteFlags = 0x02 | 0x04 | 0x08 | 0x10 | 0x20

// ReadOnlyCommands is the filter of `sonde agent --read-only`: everything
// that writes — starting programs (Processes.start, Terminals), writing
// memory and registers (Memory, Registers, Expressions.assign), writing to
// a process's input (Streams.write) and every FileSystem call that
// changes a file or directory (an open for writing, creating or
// truncating included; reads stay). Run control stays (attach, resume,
// breakpoints, terminate): it is what debugging a running program is.
func ReadOnlyCommands() *CommandFilter {
	f := NewCommandFilter("the agent is read-only (--read-only)")
	for _, p := range []string{"Processes", "ProcessesV1"} {
		f.Command(p, "start", nil)
	}
	f.Service("Terminals")
	f.Command("Memory", "set", nil).Command("Memory", "fill", nil)
	f.Command("Registers", "set", nil).Command("Registers", "setm", nil)
	f.Command("Expressions", "assign", nil)
	f.Command("Streams", "write", nil)
	for _, c := range []string{"write", "setstat", "fsetstat", "remove", "rmdir", "mkdir", "rename", "symlink", "copy"} {
		f.Command("FileSystem", c, nil)
	}
	f.Command("FileSystem", "open", func(a *Args) bool {
		a.Ignore() // path
		flags := a.Int64()
		// Unreadable flags: refuse rather than guess.
		return a.Err() != nil || flags&fsWriteFlags != 0
	})
	return f
}

// refusedReply answers a refused command (reader goroutine).
func (c *Channel) refusedReply(m *Message, err error) {
	c.log.Info("command refused", "service", string(m.Service), "command", string(m.Name), "reason", err)
	var b Builder
	b.pooled().Result('R', m.Token).Error(Report(err, c.srv.Now())).End()
	c.enqueueMsg(b.buf, false)
	b.release()
}
