package core

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/target"
)

// synthetic builds a small core of process 100 with threads 100 and 101, the
// file prog mapped at 0x400000 (read-only, partly dumped; then text not
// dumped; then writable data not dumped), a dumped stack, a vDSO, and an
// anonymous region the dump left out. head is what the core holds of prog's
// first page (nil: nothing). It returns the core's path and prog's contents.
func synthetic(t *testing.T, head func(prog []byte) []byte) (corePath, progPath string, prog []byte) {
	dir := t.TempDir()
	prog = make([]byte, 0x3000)
	for i := range prog {
		prog[i] = byte(i*13 + i>>8)
	}
	progPath = filepath.Join(dir, "prog")
	if err := os.WriteFile(progPath, prog, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(progPath, old, old)
	stack := bytes.Repeat([]byte{0x5a}, 0x1000)
	vdso := bytes.Repeat([]byte{0xc3}, 0x1000)
	header := head(prog)
	sc := synthCore{
		notes: []synthNote{
			{"CORE", NT_PRPSINFO, prpsinfoDesc(100, "synth", "./synth a b")},
			{"CORE", NT_PRSTATUS, prstatusDesc(100, 7, map[int]uint64{16: 0x401010, 19: 0x7ff800, 10: 42})},
			{"CORE", NT_FPREGSET, make([]byte, 512)},
			{"LINUX", NT_X86_XSTATE, xstateDesc(3, 0xaa)},
			{"CORE", NT_PRSTATUS, prstatusDesc(101, 7, map[int]uint64{16: 0x401020})},
			{"CORE", NT_SIGINFO, siginfoDesc(sigBUS, 2, 0x402008)},
			{"CORE", NT_AUXV, auxvDesc(AT_ENTRY, 0x401000, AT_SYSINFO_EHDR, 0x7fff0000, AT_EXECFN, 0x7ffc00)},
			{"CORE", NT_FILE, fileDesc(4096, []FileMapping{
				{Start: 0x400000, End: 0x401000, Offset: 0, Path: progPath},
				{Start: 0x401000, End: 0x402000, Offset: 0x1000, Path: progPath},
				{Start: 0x402000, End: 0x403000, Offset: 0x2000, Path: progPath},
			})},
			{"CORE", 0x1234, []byte("ignored")},
		},
		loads: []synthLoad{
			{vaddr: 0x400000, flags: pfR, data: header, memsz: 0x1000},
			{vaddr: 0x401000, flags: pfR | pfX, memsz: 0x1000},
			{vaddr: 0x402000, flags: pfR | pfW, memsz: 0x1000},
			{vaddr: 0x500000, flags: pfR | pfW, memsz: 0x2000},
			{vaddr: 0x7ff000, flags: pfR | pfW, data: stack},
			{vaddr: 0x7fff0000, flags: pfR | pfX, data: vdso},
		},
	}
	corePath = filepath.Join(dir, "core")
	if err := os.WriteFile(corePath, sc.bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return corePath, progPath, prog
}

// sameHead dumps prog's first 0x100 bytes, as the kernel dumps an ELF
// file's first page.
func sameHead(prog []byte) []byte { return prog[:0x100] }

func TestSyntheticCore(t *testing.T) {
	corePath, progPath, prog := synthetic(t, sameHead)
	tg, c := openCore(t, corePath, Options{})
	proc := c.Process()
	// Opening and reading registers looks at no mapped file.
	for _, th := range proc.Children() {
		th.Registers()
	}
	if c.byPath != nil || c.image.Sections() != nil {
		t.Errorf("Open looked for the mapped files already")
	}
	if proc.ID() != "P100" || proc.Name() != "synth" || c.PSInfo().Args != "./synth a b" {
		t.Errorf("process %s %q", proc.ID(), proc.Name())
	}
	if exe := c.Executable(); exe == nil || exe.Path != progPath || exe.Found != progPath {
		t.Errorf("executable %+v", exe)
	}
	if v, _ := c.Auxv().Lookup(AT_SYSINFO_EHDR); v != 0x7fff0000 {
		t.Errorf("AT_SYSINFO_EHDR 0x%x", v)
	}

	// Threads, reasons, registers.
	t100, _ := tg.Lookup("P100.100")
	t101, _ := tg.Lookup("P100.101")
	if t100 == nil || t101 == nil || len(proc.Children()) != 2 {
		t.Fatalf("threads %v", proc.Children())
	}
	if _, r, pc := t101.State(); r.Kind != target.ReasonException || r.Signal != sigBUS || pc != 0x401020 {
		t.Errorf("101: %+v at 0x%x", r, pc)
	}
	if _, r, _ := t100.State(); r.Kind != target.ReasonContainer {
		t.Errorf("100: %+v", r)
	}
	regs, err := t100.Registers()
	if err != nil {
		t.Fatal(err)
	}
	if regs.PC() != 0x401010 || regs.SP() != 0x7ff800 {
		t.Errorf("pc 0x%x sp 0x%x", regs.PC(), regs.SP())
	}
	if rax, _ := regs.Uint64(arch.AMD64.ByName("rax")); rax != 42 {
		t.Errorf("rax %d", rax)
	}
	if x, _ := regs.Get(arch.AMD64.ByName("xmm3")); !bytes.Equal(x, bytes.Repeat([]byte{0xaa}, 16)) {
		t.Errorf("xmm3 %x", x)
	}
	if y, _ := regs.Get(arch.AMD64.ByName("ymm3h")); !bytes.Equal(y, bytes.Repeat([]byte{0xab}, 16)) {
		t.Errorf("ymm3h %x", y)
	}
	if regs101, _ := t101.Registers(); regs101.XState != nil {
		t.Errorf("thread 101 has no FP notes, yet XState is %d bytes", len(regs101.XState))
	}

	// Memory: the core's bytes, then the file's, never past what is known.
	read := func(addr uint64, n int) ([]byte, error) {
		buf := make([]byte, n)
		got, err := proc.ReadMemory(addr, buf)
		return buf[:got], err
	}
	if b, err := read(0x400000, 8); err != nil || !bytes.Equal(b, prog[:8]) {
		t.Errorf("core bytes: %q %v", b, err)
	}
	if b, err := read(0x4000f8, 0x20); err != nil || !bytes.Equal(b, prog[0xf8:0x118]) {
		t.Errorf("core then file: %x %v", b, err)
	}
	if b, err := read(0x400ff0, 0x20); err != nil || !bytes.Equal(b, prog[0xff0:0x1010]) {
		t.Errorf("across two file mappings: %x %v", b, err)
	}
	b, err := read(0x401ff0, 0x20)
	var me *target.MemoryError
	var miss *MissingError
	if !errors.As(err, &me) || me.Addr != 0x402000 || me.Valid != 16 || !bytes.Equal(b, prog[0x1ff0:0x2000]) {
		t.Errorf("into writable data: %x %v", b, err)
	}
	if !errors.As(err, &miss) || !miss.Mapped || miss.Start != 0x402000 || miss.End != 0x403000 || !strings.Contains(miss.Reason, "writable") {
		t.Errorf("writable gap: %v", err)
	}
	if _, err := read(0x500800, 4); !errors.As(err, &miss) || !strings.Contains(miss.Reason, "anonymous") {
		t.Errorf("anonymous gap: %v", err)
	}
	if _, err := read(0x600000, 4); !errors.As(err, &miss) || miss.Mapped || miss.Start != 0x502000 || miss.End != 0x7ff000 {
		t.Errorf("unmapped: %v", err)
	}
	if !errors.Is(err, target.ErrInvalidAddress) {
		t.Errorf("%v is not ErrInvalidAddress", err)
	}
	if b, err := read(0x7fff0ff8, 8); err != nil || !bytes.Equal(b, vdsoBytes(8)) {
		t.Errorf("vdso: %x %v", b, err)
	}

	// The memory map.
	m, err := proc.MemoryMap()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"400000-401000 r--p 00000000 00:00 0 " + progPath,
		"401000-402000 r-xp 00001000 00:00 0 " + progPath,
		"402000-403000 rw-p 00002000 00:00 0 " + progPath,
		"500000-502000 rw-p 00000000 00:00 0 ",
		"7ff000-800000 rw-p 00000000 00:00 0 [stack]",
		"7fff0000-7fff1000 r-xp 00000000 00:00 0 [vdso]",
	}
	if len(m) != len(want) {
		t.Fatalf("map %v", m)
	}
	for i := range want {
		if m[i].String() != want[i] {
			t.Errorf("region %d: %q, want %q", i, m[i].String(), want[i])
		}
	}

	// What the core cannot provide, precisely.
	var notDumped []string
	for _, p := range c.Problems() {
		if p.Kind != ProblemNotDumped {
			t.Errorf("unexpected problem %v", p)
		}
		notDumped = append(notDumped, p.String())
	}
	if len(notDumped) != 2 || !strings.Contains(notDumped[0], "0x402000-0x403000") || !strings.Contains(notDumped[1], "0x500000-0x502000") {
		t.Errorf("problems %q", notDumped)
	}

	// A core is read-only.
	for name, err := range map[string]error{
		"resume":    t100.Resume(target.ResumeContinue, target.ResumeOptions{}),
		"write":     func() error { _, err := proc.WriteMemory(0x7ff000, []byte{1}); return err }(),
		"setregs":   t100.SetRegisters(regs),
		"terminate": proc.Terminate(),
		"detach":    proc.Detach(),
		"signal":    proc.Signal(9),
		"breakpoint": func() error {
			_, err := tg.SetBreakpoint(proc, target.BreakpointSpec{Addr: 0x401000})
			return err
		}(),
		"attach": func() error { _, err := tg.Attach(1, target.AttachOptions{}); return err }(),
	} {
		if !errors.Is(err, target.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
	if t100.CanResume() != 0 {
		t.Errorf("CanResume %v", t100.CanResume())
	}
	_ = progPath
}

func vdsoBytes(n int) []byte { return bytes.Repeat([]byte{0xc3}, n) }

// TestSyntheticFiles covers finding and refusing the mapped file.
func TestSyntheticFiles(t *testing.T) {
	text := func(corePath string, opts Options) ([]byte, error) {
		_, c := openCore(t, corePath, opts)
		buf := make([]byte, 16)
		n, err := c.Process().ReadMemory(0x401000, buf)
		return buf[:n], err
	}
	var miss *MissingError
	old := time.Now().Add(-time.Hour)
	future := time.Now().Add(time.Hour)

	// The core holds the file's first bytes: candidates must match them.
	corePath, progPath, prog := synthetic(t, sameHead)
	_, err := text(corePath, Options{Sysroot: t.TempDir()})
	if !errors.As(err, &miss) || !strings.Contains(miss.Reason, "not found") {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	copyFile(t, progPath, filepath.Join(dir, "prog")) // a fresh copy, newer than the core
	if b, err := text(corePath, Options{Sysroot: t.TempDir(), SearchPath: []string{dir}}); err != nil || !bytes.Equal(b, prog[0x1000:0x1010]) {
		t.Errorf("search path: %x %v", b, err)
	}
	other := append([]byte(nil), prog...)
	other[0x80] ^= 1
	os.WriteFile(filepath.Join(dir, "prog"), other, 0o644)
	_, err = text(corePath, Options{Sysroot: t.TempDir(), SearchPath: []string{dir}})
	if !errors.As(err, &miss) || !strings.Contains(miss.Reason, "first 256 bytes differ") {
		t.Errorf("different first page: %v", err)
	}

	// The core holds nothing of the file: without a build-id or bytes to
	// compare, a file modified after the core is not trusted.
	corePath, progPath, prog = synthetic(t, func([]byte) []byte { return nil })
	if b, err := text(corePath, Options{}); err != nil || !bytes.Equal(b, prog[0x1000:0x1010]) {
		t.Errorf("older file: %x %v", b, err)
	}
	os.Chtimes(progPath, future, future)
	_, err = text(corePath, Options{})
	if !errors.As(err, &miss) || !strings.Contains(miss.Reason, "after the core was written") {
		t.Errorf("newer file: %v", err)
	}
	// Too short for its mappings.
	os.WriteFile(progPath, prog[:0x800], 0o755)
	os.Chtimes(progPath, old, old)
	_, c := openCore(t, corePath, Options{})
	mf := c.MappedFiles()[0]
	var fc *FileChangedError
	if !errors.As(mf.Err, &fc) || !strings.Contains(fc.Reason, "mapped it up to offset 12288") || !hasProblem(c, ProblemFileChanged, progPath) {
		t.Errorf("short file: %+v", mf)
	}
}

// TestSyntheticDamage covers lying program headers: a segment whose p_filesz
// exceeds p_memsz, overlapping segments, a core cut short, and notes with
// lying sizes after good ones.
func TestSyntheticDamage(t *testing.T) {
	sc := synthCore{
		notes: []synthNote{
			{"CORE", NT_PRSTATUS, prstatusDesc(5, 0, map[int]uint64{16: 0x1234})},
			{"CORE", NT_PRSTATUS, prstatusDesc(5, 0, nil)}, // repeated tid
			{"CORE", NT_PRSTATUS, make([]byte, 40)},        // too short
			{"CORE", NT_FPREGSET, make([]byte, 10)},
		},
		loads: []synthLoad{
			{vaddr: 0x10000, flags: pfR, data: bytes.Repeat([]byte{1}, 0x2000), memsz: 0x1000},
			{vaddr: 0x10800, flags: pfR, data: bytes.Repeat([]byte{2}, 0x1000)},
			{vaddr: 0x20000, flags: pfR | pfW, data: bytes.Repeat([]byte{3}, 0x1000)},
		},
	}
	raw := sc.bytes()
	// The notes segment claims 64 more bytes than it has, eating into the
	// first load: the walker must stop at the first lie.
	path := filepath.Join(t.TempDir(), "core")
	if err := os.WriteFile(path, raw[:len(raw)-0x800], 0o600); err != nil {
		t.Fatal(err)
	}
	_, c := openCore(t, path, Options{})
	kinds := map[ProblemKind]int{}
	for _, p := range c.Problems() {
		kinds[p.Kind]++
		t.Log(p)
	}
	if kinds[ProblemBadSegment] != 2 || kinds[ProblemTruncated] != 1 || kinds[ProblemBadNote] != 2 || kinds[ProblemMissingInfo] < 2 {
		t.Errorf("problems by kind %v", kinds)
	}
	if c.PID() != 5 || len(c.Threads()) != 1 || c.Threads()[0].FPRegs != nil {
		t.Errorf("pid %d threads %d", c.PID(), len(c.Threads()))
	}
	buf := make([]byte, 4)
	// Overlap: the segment that starts first keeps the overlapped bytes, in
	// reads as in the memory map.
	if _, err := c.Process().ReadMemory(0x10ffe, buf); err != nil || !bytes.Equal(buf, []byte{1, 1, 2, 2}) {
		t.Errorf("overlap: %x %v", buf, err)
	}
	// Truncated: the last 0x800 bytes of the 0x20000 segment are gone.
	if _, err := c.Process().ReadMemory(0x207fe, buf); err == nil || !bytes.Equal(buf[:2], []byte{3, 3}) {
		t.Errorf("truncated: %x %v", buf, err)
	}
	var miss *MissingError
	if _, err := c.Process().ReadMemory(0x20900, buf); !errors.As(err, &miss) || !strings.Contains(miss.Reason, "truncated") {
		t.Errorf("truncated: %v", err)
	}

	// Errors that leave nothing to show.
	for name, data := range map[string][]byte{
		"empty":     nil,
		"not ELF":   []byte("this is not an ELF file at all, not even close to one, no...."),
		"no notes":  synthCore{loads: sc.loads}.bytes(),
		"no phdrs":  raw[:70],
		"exec file": func() []byte { b := append([]byte(nil), raw...); b[16] = etExec; return b }(),
	} {
		p := filepath.Join(t.TempDir(), "core")
		os.WriteFile(p, data, 0o600)
		if tg, err := Open(p, Options{}); err == nil {
			tg.Close()
			t.Errorf("%s: opened", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// TestConcurrentReads reads from several goroutines at once (run with -race):
// the core, a mapped file and gaps.
func TestConcurrentReads(t *testing.T) {
	corePath, _, prog := synthetic(t, sameHead)
	_, c := openCore(t, corePath, Options{})
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			buf := make([]byte, 32)
			for i := 0; i < 500; i++ {
				addr := uint64(0x400000 + (i*97)%0x1fe0)
				if _, err := c.Process().ReadMemory(addr, buf); err != nil || !bytes.Equal(buf, prog[addr-0x400000:][:32]) {
					done <- err
					return
				}
				if _, err := c.Process().ReadMemory(0x500000+uint64(i), buf); err == nil {
					done <- errors.New("a gap read succeeded")
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestExtendedPhnum checks PN_XNUM: with 65535 or more program headers the
// kernel puts 0xffff in e_phnum and the real count in section header 0's
// sh_info.
func TestExtendedPhnum(t *testing.T) {
	corePath, _, _ := synthetic(t, sameHead)
	raw, err := os.ReadFile(corePath)
	if err != nil {
		t.Fatal(err)
	}
	phnum := le.Uint16(raw[56:])
	sh := make([]byte, 64)
	le.PutUint32(sh[44:], uint32(phnum))
	le.PutUint64(raw[40:], uint64(len(raw))) // e_shoff
	le.PutUint16(raw[56:], 0xffff)
	path := filepath.Join(t.TempDir(), "core")
	os.WriteFile(path, append(raw, sh...), 0o600)
	_, c := openCore(t, path, Options{})
	if len(c.Segments()) != int(phnum) || len(c.Threads()) != 2 {
		t.Errorf("%d segments, %d threads", len(c.Segments()), len(c.Threads()))
	}
	// Section header 0 missing.
	os.WriteFile(path, raw, 0o600)
	var fe *FormatError
	if _, err := Open(path, Options{}); !errors.As(err, &fe) || !strings.Contains(err.Error(), "PN_XNUM") {
		t.Errorf("no section header: %v", err)
	}
}

// TestManyMappings opens a core of a process with 5,000 mappings of one file
// (past maxImageSections, so most file bytes come through the fallback) and
// 5,000 anonymous segments, and reads a marker from every file mapping.
func TestManyMappings(t *testing.T) {
	const n = 5000
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	f, err := os.Create(lib)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		f.WriteAt(le.AppendUint64(nil, uint64(i)*0x1111), int64(i)*0x2000+8)
	}
	f.Truncate(n * 0x2000)
	f.Close()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lib, old, old)
	sc := synthCore{notes: []synthNote{{"CORE", NT_PRSTATUS, prstatusDesc(1, 0, nil)}}}
	var fm []FileMapping
	for i := 0; i < n; i++ {
		a := uint64(0x100000 + i*0x4000)
		sc.loads = append(sc.loads, synthLoad{vaddr: a, flags: pfR, memsz: 0x1000})
		sc.loads = append(sc.loads, synthLoad{vaddr: a + 0x2000, flags: pfR | pfW, data: le.AppendUint64(nil, uint64(i))})
		fm = append(fm, FileMapping{Start: a, End: a + 0x1000, Offset: uint64(i) * 0x2000, Path: lib})
	}
	sc.notes = append(sc.notes, synthNote{"CORE", NT_FILE, fileDesc(4096, fm)})
	path := filepath.Join(dir, "core")
	os.WriteFile(path, sc.bytes(), 0o600)
	start := time.Now()
	_, c := openCore(t, path, Options{})
	t.Logf("opened a core with %d segments in %v; %d sections in the image", len(c.Segments()), time.Since(start), len(c.Image().Sections()))
	buf := make([]byte, 8)
	for i := 0; i < n; i++ {
		a := uint64(0x100000 + i*0x4000)
		if _, err := c.Process().ReadMemory(a+8, buf); err != nil || le.Uint64(buf) != uint64(i)*0x1111 {
			t.Fatalf("file mapping %d: %x %v", i, buf, err)
		}
		if _, err := c.Process().ReadMemory(a+0x2000, buf); err != nil || le.Uint64(buf) != uint64(i) {
			t.Fatalf("core segment %d: %x %v", i, buf, err)
		}
	}
}

// TestExecutableWithoutAuxv finds the executable by the command name when the
// core has no NT_AUXV, so Options.Executable still applies.
func TestExecutableWithoutAuxv(t *testing.T) {
	dir := t.TempDir()
	prog := bytes.Repeat([]byte("0123456789abcdef"), 0x200)
	saved := filepath.Join(dir, "saved-prog")
	os.WriteFile(saved, prog, 0o755)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(saved, old, old)
	sc := synthCore{
		notes: []synthNote{
			{"CORE", NT_PRPSINFO, prpsinfoDesc(3, "a-rather-long-n", "")},
			{"CORE", NT_PRSTATUS, prstatusDesc(3, 0, nil)},
			{"CORE", NT_FILE, fileDesc(4096, []FileMapping{
				{Start: 0x7000, End: 0x8000, Offset: 0, Path: "/gone/libz.so"},
				{Start: 0x9000, End: 0xa000, Offset: 0x1000, Path: "/gone/a-rather-long-name"},
			})},
		},
		loads: []synthLoad{{vaddr: 0x7000, flags: pfR, memsz: 0x1000}, {vaddr: 0x9000, flags: pfR | pfX, memsz: 0x1000}},
	}
	path := filepath.Join(dir, "core")
	os.WriteFile(path, sc.bytes(), 0o600)
	_, c := openCore(t, path, Options{Executable: saved})
	if exe := c.Executable(); exe == nil || exe.Path != "/gone/a-rather-long-name" || exe.How != "executable option" {
		t.Fatalf("executable %+v", exe)
	}
	buf := make([]byte, 16)
	if _, err := c.Process().ReadMemory(0x9000, buf); err != nil || !bytes.Equal(buf, prog[0x1000:0x1010]) {
		t.Errorf("text: %q %v", buf, err)
	}
}

// TestCoreShrinksWhileOpen cuts the core file under an open Target: reads of
// the lost pages fail with an error (the SIGBUS is caught), never crash.
func TestCoreShrinksWhileOpen(t *testing.T) {
	corePath, _, _ := synthetic(t, sameHead)
	_, c := openCore(t, corePath, Options{})
	buf := make([]byte, 8)
	if _, err := c.Process().ReadMemory(0x7ff000, buf); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(corePath, 4096); err != nil {
		t.Fatal(err)
	}
	_, err := c.Process().ReadMemory(0x7ff800, buf)
	var me *target.MemoryError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "changed while open") {
		t.Errorf("read after the core shrank: %v", err)
	}
}
