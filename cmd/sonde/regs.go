package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
)

func init() {
	register(verb{"regs", "print every thread's registers, like gdb's info registers", runRegs})
}

func runRegs(args []string) int {
	fs := newFlagSet("regs", "sonde regs [--json] [-t TID] PID\n       sonde regs --core CORE [--exe EXE] [--sysroot DIR] [--json] [-t TID]",
		"Prints the general registers of every thread as gdb's `info registers` does (name, raw\n"+
			"hex value, natural value), and the AVX-512 mask registers when the CPU has them.\n"+
			"A live process is stopped only while its registers are read, then continues as it\n"+
			"was (a process that was job-control stopped stays stopped).")
	asJSON := fs.Bool("json", false, "print JSON")
	tf := addTargetFlags(fs)
	onlyTID := fs.Int("t", 0, "show only the thread `TID` (a thread id, as in LWP TID)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	opened, code := tf.open(fs)
	if opened == nil {
		return code
	}
	sess := session.New(opened.target, session.Options{})
	snap, err := snapshotRegisters(sess, opened.process)
	opened.close() // the process continues before anything is formatted
	if err == nil && *onlyTID != 0 {
		err = snap.only(*onlyTID)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde regs: %v\n", err)
		return 1
	}
	if *asJSON {
		err = writeRegsJSON(os.Stdout, snap)
	} else {
		err = writeRegs(os.Stdout, snap)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde regs: %v\n", err)
		return 1
	}
	return 0
}

// regsSnapshot is what regs prints: every thread's registers and the names
// of the code addresses in them.
type regsSnapshot struct {
	pid     int
	threads []threadRegs
	symbols map[uint64]string // pc -> "symbol+offset"
}

type threadRegs struct {
	tid  int
	name string
	regs *target.Registers
	err  error
}

// only keeps the thread tid, or says which threads there are.
func (s *regsSnapshot) only(tid int) error {
	var tids []int
	for _, th := range s.threads {
		if th.tid == tid {
			s.threads = []threadRegs{th}
			return nil
		}
		tids = append(tids, th.tid)
	}
	return fmt.Errorf("process %d has no thread %d (its threads: %v)", s.pid, tid, tids)
}

func snapshotRegisters(sess *session.Session, proc *target.Context) (*regsSnapshot, error) {
	s := &regsSnapshot{pid: proc.PID(), symbols: map[uint64]string{}}
	for _, th := range proc.Children() {
		r, err := th.Registers()
		s.threads = append(s.threads, threadRegs{tid: th.TID(), name: th.Name(), regs: r, err: err})
	}
	if len(s.threads) == 0 {
		return nil, fmt.Errorf("%s has no threads", proc.ID())
	}
	// Named while the process is held: the session reads its modules.
	for _, th := range s.threads {
		if th.regs == nil {
			continue
		}
		pc := th.regs.PC()
		if name, off, ok := sess.SymbolAt(proc, pc); ok {
			if off != 0 {
				name = fmt.Sprintf("%s+%d", name, off)
			}
			s.symbols[pc] = name
		}
	}
	return s, nil
}

// shownRegisters are the registers gdb's `info registers` shows on x86-64, in its
// order: the general group, then the AVX-512 masks when present.
func shownRegisters(r *target.Registers) []*arch.Register {
	var out []*arch.Register
	for i := range r.Arch.Registers {
		reg := &r.Arch.Registers[i]
		if (reg.Group == "general" || reg.Group == "segment") && r.Has(reg) {
			out = append(out, reg)
		}
	}
	for k := 0; k < 8; k++ {
		if reg := r.Arch.ByName(fmt.Sprintf("k%d", k)); reg != nil && r.Has(reg) {
			out = append(out, reg)
		}
	}
	return out
}

// eflagsNames are the flag bits gdb names, by bit number.
var eflagsNames = map[int]string{0: "CF", 2: "PF", 4: "AF", 6: "ZF", 7: "SF", 8: "TF", 9: "IF", 10: "DF", 11: "OF",
	14: "NT", 16: "RF", 17: "VM", 18: "AC", 19: "VIF", 20: "VIP", 21: "ID"}

// naturalValue is gdb's second column: pointers in hex (code with <symbol+off>),
// flags as a list, everything else as a signed decimal.
func (s *regsSnapshot) naturalValue(reg *arch.Register, v uint64) string {
	switch {
	case reg.Role == arch.RolePC:
		if name := s.symbols[v]; name != "" {
			return fmt.Sprintf("0x%x <%s>", v, name)
		}
		return fmt.Sprintf("0x%x", v)
	case reg.Role == arch.RoleSP || reg.Role == arch.RoleFP:
		return fmt.Sprintf("0x%x", v)
	case reg.Name == "eflags":
		var names []string
		for bit := 0; bit < 22; bit++ {
			if n, ok := eflagsNames[bit]; ok && v&(1<<bit) != 0 {
				names = append(names, n)
			}
		}
		return "[ " + strings.Join(names, " ") + " ]"
	case strings.HasPrefix(reg.Name, "k"):
		return fmt.Sprintf("%d", v)
	}
	return fmt.Sprintf("%d", int64(v))
}

func writeRegs(w io.Writer, s *regsSnapshot) error {
	for i, th := range s.threads {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if th.name != "" {
			fmt.Fprintf(w, "Thread %d (%s):\n", th.tid, th.name)
		} else {
			fmt.Fprintf(w, "Thread %d:\n", th.tid) // cores record no thread names
		}
		if th.err != nil {
			fmt.Fprintf(w, "  registers unavailable: %v\n", th.err)
			continue
		}
		for _, reg := range shownRegisters(th.regs) {
			v, _ := th.regs.Uint64(reg)
			raw := fmt.Sprintf("0x%x", v)
			if _, err := fmt.Fprintf(w, "%-15s%-19s %s\n", reg.Name, raw, s.naturalValue(reg, v)); err != nil {
				return err
			}
		}
	}
	return nil
}

type regsJSON struct {
	PID     int              `json:"pid"`
	Threads []threadRegsJSON `json:"threads"`
}

type threadRegsJSON struct {
	TID       int       `json:"tid"`
	Name      string    `json:"name"`
	Error     string    `json:"error,omitempty"`
	Registers []regJSON `json:"registers,omitempty"`
}

type regJSON struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Natural string `json:"natural"`
}

func writeRegsJSON(w io.Writer, s *regsSnapshot) error {
	out := regsJSON{PID: s.pid}
	for _, th := range s.threads {
		tj := threadRegsJSON{TID: th.tid, Name: th.name}
		if th.err != nil {
			tj.Error = th.err.Error()
		} else {
			for _, reg := range shownRegisters(th.regs) {
				v, _ := th.regs.Uint64(reg)
				tj.Registers = append(tj.Registers, regJSON{reg.Name, fmt.Sprintf("0x%x", v), s.naturalValue(reg, v)})
			}
		}
		out.Threads = append(out.Threads, tj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
