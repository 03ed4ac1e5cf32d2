package services_test

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/services"
)

// disProg builds testdata/dis_svc_prog.c at -O0.
func disProg(t testing.TB) string {
	t.Helper()
	return testprog.Build(t, testprog.Spec{Sources: []string{"dis_svc_prog.c"}, Flags: []string{"-O0"}})
}

// objdumpLine is one instruction as objdump prints it.
type objdumpLine struct {
	addr  uint64
	bytes []byte
	text  string // mnemonic and operands, whitespace collapsed
}

// objdumpFunction disassembles one function of exe with objdump (GNU syntax
// unless intel), link-time addresses.
func objdumpFunction(t *testing.T, exe, fn string, intel bool) []objdumpLine {
	t.Helper()
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("objdump is needed as the reference disassembler")
	}
	args := []string{"-d", "--disassemble=" + fn}
	if intel {
		args = append(args, "-M", "intel")
	}
	out, err := exec.Command("objdump", append(args, exe)...).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	re := regexp.MustCompile(`^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*\t(.*)$`)
	var lines []objdumpLine
	for _, l := range strings.Split(string(out), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		addr, _ := strconv.ParseUint(m[1], 16, 64)
		var b []byte
		for _, h := range strings.Fields(m[2]) {
			v, _ := strconv.ParseUint(h, 16, 8)
			b = append(b, byte(v))
		}
		lines = append(lines, objdumpLine{addr: addr, bytes: b, text: strings.Join(strings.Fields(m[3]), " ")})
	}
	if len(lines) == 0 {
		t.Fatalf("objdump printed no instructions of %s", fn)
	}
	return lines
}

// loadBias finds where the executable is mapped from the MemoryMap service
// (test programs are PIE, linked at 0).
func loadBias(t *testing.T, la *liveAgent, proc, exe string) uint64 {
	t.Helper()
	var e error
	var regions []map[string]any
	la.decode("MemoryMap", "get", []any{proc}, &e, &regions)
	for _, r := range regions {
		if r["FileName"] == exe && num(r["Offs"]) == 0 {
			return num(r["Addr"])
		}
	}
	t.Fatalf("no mapping of %s at offset 0 in %v", exe, regions)
	return 0
}

// disassemble runs Disassembly.disassemble and fails on an error report.
func disassemble(t *testing.T, la *liveAgent, ctx string, addr uint64, size int, params map[string]any) []services.DisassemblyLine {
	t.Helper()
	var e error
	var lines []services.DisassemblyLine
	la.decode("Disassembly", "disassemble", []any{ctx, addr, size, params}, &e, &lines)
	return lines
}

// TestLiveDisassembly lists a function of a live process with a breakpoint
// planted in it and compares every line with objdump over the executable:
// addresses, sizes and bytes (so the planted int3 must not show), the text in
// both syntaxes, the symbolic call target and RIP-relative comment; then the
// listing's alignment for an address inside an instruction and the errors.
func TestLiveDisassembly(t *testing.T) {
	prog := disProg(t)
	ref := objdumpFunction(t, prog, "dis_step", false)
	refIntel := objdumpFunction(t, prog, "dis_step", true)
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	la.suspended(m0, mainThread(proc))
	bias := loadBias(t, la, proc, prog)

	// Plant a breakpoint inside dis_step and check it really is in memory.
	m1 := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "dis-bp", "Enabled": true, "Location": "dis_step"})
	st, _ := la.events.wait(t, m1, "status of dis-bp", is("Breakpoints", "status", "dis-bp"))
	inst := instances(st.Args[1])
	if len(inst) != 1 || inst[0]["Error"] != nil {
		t.Fatalf("dis-bp status %v", st)
	}
	bpAddr := num(inst[0]["Address"])
	raw := make([]byte, 1)
	f, err := os.Open("/proc/" + strings.TrimPrefix(proc, "P") + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(raw, int64(bpAddr)); err != nil || raw[0] != 0xcc {
		t.Fatalf("breakpoint not in memory at 0x%x: % x %v", bpAddr, raw, err)
	}

	entry := bias + ref[0].addr
	last := ref[len(ref)-1]
	size := int(last.addr + uint64(len(last.bytes)) - ref[0].addr)
	for _, syntax := range []string{"GNU", "Intel"} {
		want := ref
		if syntax == "Intel" {
			want = refIntel
		}
		// The whole function, breakpoint included (listings that start
		// inside it are checked below).
		lines := disassemble(t, la, mainThread(proc), entry, size,
			map[string]any{"Syntax": syntax, "OpcodeValue": true})
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines, objdump has %d", syntax, len(lines), len(want))
		}
		sawCall, sawRIP := false, false
		for i, l := range lines {
			w := want[i]
			if l.Address != bias+w.addr || l.Size != len(w.bytes) || !bytes.Equal(l.OpcodeValue, w.bytes) {
				t.Errorf("%s line %d: 0x%x size %d bytes % x, objdump 0x%x % x", syntax, i, l.Address-bias, l.Size, l.OpcodeValue, w.addr, w.bytes)
			}
			got := l.Text()
			if strings.HasPrefix(w.text, "call") {
				sawCall = true
				// objdump: "call 1149 <dis_leaf>": link-time target, no 0x.
				if len(l.Instruction) != 3 || l.Instruction[1].Type != "Address" || l.Instruction[1].AddressSpace != proc || l.Instruction[2].Text != "<dis_leaf>" {
					t.Errorf("%s call line fields %+v", syntax, l.Instruction)
				}
				tgt := strings.Fields(w.text)[1]
				v, _ := strconv.ParseUint(tgt, 16, 64)
				if *l.Instruction[1].Value != bias+v {
					t.Errorf("%s call target 0x%x, objdump 0x%x", syntax, *l.Instruction[1].Value-bias, v)
				}
				continue
			}
			if strings.Contains(w.text, "#") {
				sawRIP = true
				// objdump: "... # 4034 <dis_counter>"; ours has the run-time address.
				code, comment, _ := strings.Cut(w.text, " #")
				if !strings.HasPrefix(got, code+" # 0x") || !strings.HasSuffix(got, comment[strings.Index(comment, "<"):]) {
					t.Errorf("%s line %d: %q, objdump %q", syntax, i, got, w.text)
				}
				continue
			}
			if got != w.text {
				t.Errorf("%s line %d: %q, objdump %q", syntax, i, got, w.text)
			}
		}
		if !sawCall || !sawRIP {
			t.Errorf("%s: the listing lacks the call or the RIP-relative lines", syntax)
		}
	}

	// Default: Intel syntax, no opcode bytes; an address in the middle of an
	// instruction lists from that instruction (decoded from the entry, so on
	// boundaries), and a size of 1 lists that instruction alone.
	second := entry + ref[1].addr - ref[0].addr
	lines := disassemble(t, la, proc, second+1, 1, nil)
	if len(lines) != 1 || lines[0].Address != second || lines[0].OpcodeValue != nil || lines[0].Text() != refIntel[1].text {
		t.Errorf("mid-instruction listing: %+v", lines)
	}
	// Three instructions from the third one on.
	third := entry + ref[2].addr - ref[0].addr
	lines = disassemble(t, la, proc, third, int(ref[5].addr-ref[2].addr), nil)
	if len(lines) != 3 || lines[0].Address != third || lines[2].Text() != refIntel[4].text {
		t.Errorf("listing from the third instruction: %+v", lines)
	}

	var e error
	var caps []map[string]any
	la.decode("Disassembly", "getCapabilities", []any{proc}, &e, &caps)
	if len(caps) == 0 || caps[0]["ISA"] != "X86_64" || caps[0]["Syntax"] != "Intel" {
		t.Errorf("capabilities %v", caps)
	}
	// Errors: unmapped memory, an unknown ISA, an unknown context.
	for _, c := range []struct {
		ctx    string
		addr   uint64
		params map[string]any
		code   int
	}{
		{proc, 0x10, nil, tcf.CodeInvalidAddress},
		{proc, entry, map[string]any{"ISA": "PPC"}, tcf.CodeUnsupported},
		{"P999999", entry, nil, tcf.CodeInvalidContext},
	} {
		var lines any
		r := la.call("Disassembly", "disassemble", c.ctx, c.addr, 16, c.params)
		if err := r.Decode(&e, &lines); err != nil {
			t.Fatal(err)
		}
		if e == nil || errCode(t, e) != c.code || lines != nil {
			t.Errorf("disassemble(%s, 0x%x, %v): %v, %v; want code %d", c.ctx, c.addr, c.params, e, lines, c.code)
		}
	}
}

// TestLiveDisassemblyVzeroupper checks the listing of a function holding
// vzeroupper (which x86asm mis-sizes) against the ELF bytes, over a live
// process that never runs it.
func TestLiveDisassemblyVzeroupper(t *testing.T) {
	prog := disProg(t)
	ref := objdumpFunction(t, prog, "dis_avx", false)
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	la.suspended(m0, mainThread(proc))
	bias := loadBias(t, la, proc, prog)
	lines := disassemble(t, la, proc, bias+ref[0].addr, int(ref[len(ref)-1].addr-ref[0].addr+1), map[string]any{"Syntax": "GNU"})
	if len(lines) != len(ref) {
		t.Fatalf("%d lines, objdump %d: %+v", len(lines), len(ref), lines)
	}
	found := false
	for i, l := range lines {
		if l.Address-bias != ref[i].addr || l.Text() != ref[i].text {
			t.Errorf("line %d: 0x%x %q, objdump 0x%x %q", i, l.Address-bias, l.Text(), ref[i].addr, ref[i].text)
		}
		found = found || ref[i].text == "vzeroupper"
	}
	if !found {
		t.Fatal("objdump shows no vzeroupper in dis_avx")
	}
}
