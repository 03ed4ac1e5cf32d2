package services

import (
	"bytes"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// sysMonitorSvc is the SysMonitor service's commands over /proc.
type sysMonitorSvc struct {
	a *Agent
}

// RegisterSysMonitor adds the SysMonitor service: the system's processes as
// /proc shows them (attach dialogs and process lists use it).
func (a *Agent) RegisterSysMonitor() {
	sm := &sysMonitorSvc{a: a}
	svc := a.srv.Service("SysMonitor")
	svc.Command("getChildren", sm.getChildren)
	svc.Command("getContext", sm.getContext)
	list := func(file string) func(c *tcf.Call) {
		return func(c *tcf.Call) {
			pid, err := pidArg(c)
			if err != nil {
				c.Reply().Error(err).Null().Send()
				return
			}
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
			if err != nil {
				c.Reply().Error(tcf.Errorf(tcf.CodeInvalidContext, "process %d: %w", pid, err)).Null().Send()
				return
			}
			if len(data) == 0 {
				c.Reply().Error(nil).Null().Send() // kernel threads
				return
			}
			parts := strings.Split(string(bytes.TrimSuffix(data, []byte{0})), "\x00")
			c.Reply().Error(nil).Data(parts).Send()
		}
	}
	svc.Command("getCommandLine", list("cmdline"))
	svc.Command("getEnvironment", list("environ"))
}

func (sm *sysMonitorSvc) getChildren(c *tcf.Call) {
	args := c.Args()
	parent := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	out := []string{}
	if parent == "" {
		for _, pid := range listPIDs() {
			out = append(out, string(target.ProcessID(pid)))
		}
	}
	c.Reply().Error(nil).Data(out).Send()
}

func (sm *sysMonitorSvc) getContext(c *tcf.Call) {
	pid, err := pidArg(c)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	props, err := procStat(pid)
	c.Reply().Error(err).Data(props).Send()
}

// procStat reads a process's /proc/PID/stat and status into SysMonitor
// properties.
func procStat(pid int) (map[string]any, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "process %d: %w", pid, err)
	}
	s := string(data)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return nil, tcf.Errorf(tcf.CodeOther, "process %d: unreadable stat", pid)
	}
	comm := s[open+1 : close]
	f := strings.Fields(s[close+1:])
	num := func(i int) uint64 {
		if i < len(f) {
			v, _ := strconv.ParseUint(f[i], 10, 64)
			return v
		}
		return 0
	}
	snum := func(i int) int64 {
		if i < len(f) {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			return v
		}
		return 0
	}
	// Fields after ")": 0 state, 1 ppid, 2 pgrp, 3 session, 4 tty, 5 tpgid,
	// 6 flags, 7 minflt, 8 cminflt, 9 majflt, 10 cmajflt, 11 utime, 12 stime,
	// 13 cutime, 14 cstime, 15 priority, 16 nice, 17 threads, 18 itreal,
	// 19 starttime, 20 vsize, 21 rss.
	p := map[string]any{
		"ID":        string(target.ProcessID(pid)),
		"PID":       uint64(pid),
		"File":      comm,
		"State":     f[0],
		"PPID":      num(1),
		"PGRP":      num(2),
		"Session":   num(3),
		"TTY":       num(4),
		"TGID":      uint64(pid),
		"Flags":     num(6),
		"MinFlt":    num(7),
		"MajFlt":    num(9),
		"UTime":     num(11),
		"STime":     num(12),
		"CUTime":    num(13),
		"CSTime":    num(14),
		"Priority":  snum(15),
		"Nice":      snum(16),
		"Threads":   num(17),
		"StartTime": num(19),
		"VSize":     num(20),
		"PSize":     uint64(os.Getpagesize()),
		"RSS":       num(21),
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		p["Exe"] = exe
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
		p["CWD"] = cwd
	}
	if root, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid)); err == nil {
		p["Root"] = root
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			ids := strings.Fields(v)
			if len(ids) == 0 {
				continue
			}
			id, _ := strconv.ParseUint(ids[0], 10, 32)
			switch k {
			case "Uid":
				p["UID"] = id
				if u, err := user.LookupId(ids[0]); err == nil {
					p["UserName"] = u.Username
				}
			case "Gid":
				p["UGID"] = id
				if g, err := user.LookupGroupId(ids[0]); err == nil {
					p["GroupName"] = g.Name
				}
			}
		}
	}
	return p, nil
}
