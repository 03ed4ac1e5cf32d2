package services

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// Register context IDs are "R<n>.<thread ID>", n the register's index in the
// architecture's table; register groups are "RG<name>.<thread ID>". Clients
// treat them as opaque.

// topGroups are the register groups whose members are direct children of a
// thread; the others appear as group contexts.
var topGroups = map[string]bool{"general": true, "segment": true}

// registersSvc is the Registers service's commands over the registers of stopped threads and their frames.
type registersSvc struct {
	a *Agent
}

// RegisterRegisters adds the Registers service.
func (a *Agent) RegisterRegisters() {
	rs := &registersSvc{a: a}
	svc := a.srv.Service("Registers")
	queryByID(svc, "getContext", func(id string) (any, error) { return a.registerContext(id) })
	queryByID(svc, "getChildren", func(id string) (any, error) { return a.registerChildren(id) })
	svc.Command("get", rs.get)
	svc.Command("set", rs.set)
	svc.Command("getm", rs.getm)
	svc.Command("setm", rs.setm)
}

func (rs *registersSvc) get(c *tcf.Call) {
	a := rs.a
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	v, err := a.readRegister(id, 0, -1)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Binary(v).Send()
}

func (rs *registersSvc) set(c *tcf.Call) {
	a := rs.a
	args := c.Args()
	id := args.String()
	v := args.Binary()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	c.ReplyError(a.writeRegister(id, 0, v))
}

func (rs *registersSvc) getm(c *tcf.Call) {
	a := rs.a
	args := c.Args()
	var locs [][]any
	args.JSON(&locs)
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	var out []byte
	for _, l := range locs {
		id, off, size, err := location(l)
		if err == nil {
			var v []byte
			if v, err = a.readRegister(id, off, size); err == nil {
				out = append(out, v...)
				continue
			}
		}
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Binary(out).Send()
}

func (rs *registersSvc) setm(c *tcf.Call) {
	a := rs.a
	args := c.Args()
	var locs [][]any
	args.JSON(&locs)
	data := args.Binary()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	pos := 0
	for _, l := range locs {
		id, off, size, err := location(l)
		if err == nil && pos+size > len(data) {
			err = tcf.Errorf(tcf.CodeInvalidDataSize, "setm: %d bytes of data for more locations", len(data))
		}
		if err == nil {
			err = a.writeRegister(id, off, data[pos:pos+size])
		}
		if err != nil {
			c.ReplyError(err)
			return
		}
		pos += size
	}
	c.ReplyError(nil)
}

// location decodes one [id, offset, size] triple of getm/setm.
func location(l []any) (string, int, int, error) {
	if len(l) != 3 {
		return "", 0, 0, tcf.Errorf(tcf.CodeProtocol, "register location %v: want [id, offset, size]", l)
	}
	id, ok := l[0].(string)
	off, err1 := jsonInt(l[1])
	size, err2 := jsonInt(l[2])
	if !ok || err1 != nil || err2 != nil || off < 0 || size < 0 {
		return "", 0, 0, tcf.Errorf(tcf.CodeProtocol, "register location %v: want [id, offset, size]", l)
	}
	return id, off, size, nil
}

func jsonInt(v any) (int, error) {
	switch n := v.(type) {
	case interface{ String() string }:
		return strconv.Atoi(n.String())
	case float64:
		return int(n), nil
	}
	return 0, fmt.Errorf("not a number: %v", v)
}

// parseRegisterID splits "R<n>.<thread>" or "RG<group>.<thread>".
func (a *Agent) parseRegisterID(id string) (thread *target.Context, reg *arch.Register, group string, err error) {
	bad := tcf.Errorf(tcf.CodeInvalidContext, "no register %q", id)
	rest, ok := strings.CutPrefix(id, "R")
	if !ok {
		return nil, nil, "", bad
	}
	head, tid, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, nil, "", bad
	}
	if thread, err = a.lookup(tid); err != nil {
		return nil, nil, "", err
	}
	if thread.IsProcess() {
		return nil, nil, "", bad
	}
	regs := a.target.Arch().Registers
	if g, ok := strings.CutPrefix(head, "G"); ok {
		return thread, nil, g, nil
	}
	n, err := strconv.Atoi(head)
	if err != nil || n < 0 || n >= len(regs) {
		return nil, nil, "", bad
	}
	return thread, &regs[n], "", nil
}

// registerChildren lists a thread's registers and groups, or a group's members.
func (a *Agent) registerChildren(id string) ([]string, error) {
	out := []string{}
	var thread *target.Context
	var group string
	if strings.HasPrefix(id, "RG") {
		t, _, g, err := a.parseRegisterID(id)
		if err != nil {
			return nil, err
		}
		thread, group = t, g
	} else {
		t, err := a.lookup(id)
		if err != nil {
			return nil, err
		}
		if t.IsProcess() {
			return out, nil
		}
		thread = t
	}
	regs, _ := thread.Registers()
	ar := a.target.Arch()
	seen := map[string]bool{}
	for i := range ar.Registers {
		r := &ar.Registers[i]
		if regs != nil && !regs.Has(r) {
			continue
		}
		switch {
		case group == "" && topGroups[r.Group]:
			out = append(out, fmt.Sprintf("R%d.%s", i, thread.ID()))
		case group == "" && !seen[r.Group] && r.Group != "system":
			seen[r.Group] = true
			out = append(out, fmt.Sprintf("RG%s.%s", r.Group, thread.ID()))
		case group != "" && r.Group == group:
			out = append(out, fmt.Sprintf("R%d.%s", i, thread.ID()))
		}
	}
	return out, nil
}

func (a *Agent) registerContext(id string) (map[string]any, error) {
	thread, reg, group, err := a.parseRegisterID(id)
	if err != nil {
		return nil, err
	}
	p := map[string]any{"ID": id, "ProcessID": string(thread.Process().ID())}
	if reg == nil {
		p["ParentID"] = string(thread.ID())
		p["Name"] = group
		p["Description"] = group + " registers"
		return p, nil
	}
	if topGroups[reg.Group] {
		p["ParentID"] = string(thread.ID())
	} else {
		p["ParentID"] = fmt.Sprintf("RG%s.%s", reg.Group, thread.ID())
	}
	p["Name"] = reg.Name
	p["Size"] = reg.Size
	p["Readable"] = true
	p["Writeable"] = reg.Name != "orig_rax"
	p["BigEndian"] = false
	p["Float"] = reg.Float
	if reg.DWARF >= 0 {
		p["DwarfID"] = reg.DWARF
		p["EhFrameID"] = reg.DWARF
	}
	if reg.Role == arch.RolePC {
		p["Role"] = "PC"
	}
	return p, nil
}

// readRegister reads size bytes at off of a register (size -1: all of it).
func (a *Agent) readRegister(id string, off, size int) ([]byte, error) {
	thread, reg, _, err := a.parseRegisterID(id)
	if err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "%s is a register group", id)
	}
	regs, err := thread.Registers()
	if err != nil {
		return nil, err
	}
	v, err := regs.Get(reg)
	if err != nil {
		return nil, err
	}
	if size < 0 {
		size = len(v) - off
	}
	if off > len(v) || off+size > len(v) {
		return nil, tcf.Errorf(tcf.CodeInvalidDataSize, "%s has %d bytes; asked for %d at %d", reg.Name, len(v), size, off)
	}
	return v[off : off+size], nil
}

func (a *Agent) writeRegister(id string, off int, value []byte) error {
	thread, reg, _, err := a.parseRegisterID(id)
	if err != nil {
		return err
	}
	if reg == nil {
		return tcf.Errorf(tcf.CodeInvalidContext, "%s is a register group", id)
	}
	if err := thread.WriteRegister(reg, off, value); err != nil {
		return err
	}
	a.emit("Registers", "registerChanged", id)
	return nil
}
