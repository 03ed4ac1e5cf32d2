package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// programAddresses lists every byte address of the program's own functions.
func programAddresses(t *testing.T, path string) []string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	skip := map[string]bool{"_start": true, "_init": true, "_fini": true, "deregister_tm_clones": true,
		"register_tm_clones": true, "__do_global_dtors_aux": true, "frame_dummy": true}
	seen := map[uint64]bool{}
	var out []string
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Size == 0 || skip[s.Name] {
			continue
		}
		for a := s.Value; a < s.Value+s.Size; a++ {
			if !seen[a] {
				seen[a] = true
				out = append(out, fmt.Sprintf("%#x", a))
			}
		}
	}
	return out
}

var (
	discRE  = regexp.MustCompile(` \(discriminator \d+\)`)
	cloneRE = regexp.MustCompile(`(\.(cold|part|constprop|isra|lto_priv)(\.\d+)*| \[clone [^]]+\])+`)
	addrRE  = regexp.MustCompile(`^0x[0-9a-f]{16}`)
)

// blocks splits addr2line-shaped output (printed with -a) per address.
func blocks(out string) [][]string {
	var res [][]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if addrRE.MatchString(l) {
			res = append(res, nil)
		}
		if len(res) > 0 {
			res[len(res)-1] = append(res[len(res)-1], discRE.ReplaceAllString(l, ""))
		}
	}
	return res
}

// TestSymbolizeMatchesAddr2line: with the same flags our output has
// addr2line's shape line for line. Lines may differ only where addr2line
// is wrong by gdb's conventions (checked against gdb in package symbols):
// the innermost line where several rows share an address, and names taken
// from ELF symbols (".cold", "[clone .isra.0]") instead of DWARF.
func TestSymbolizeMatchesAddr2line(t *testing.T) {
	if _, err := exec.LookPath("addr2line"); err != nil {
		t.Skip("addr2line not installed")
	}
	for _, src := range []string{"dw_inline.c", "dw_cxx.cc"} {
		path := testprog.Build(t, testprog.Spec{Sources: []string{src}, Flags: []string{"-O2"}})
		addrs := programAddresses(t, path)
		for _, flags := range [][]string{{"-a"}, {"-a", "-f"}, {"-a", "-f", "-i", "-C"}, {"-a", "-f", "-i"}, {"-a", "-p", "-f", "-i", "-C"}, {"-a", "-i", "-s"}} {
			t.Run(src+strings.Join(flags, ""), func(t *testing.T) {
				cmd := exec.Command("addr2line", append([]string{"-e", path}, append(flags, addrs...)...)...)
				want, err := cmd.Output()
				if err != nil {
					t.Fatal(err)
				}
				var got, stderr bytes.Buffer
				// Bundled short flags, as addr2line users write them.
				bundle := "-" + strings.ReplaceAll(strings.Join(flags, ""), "-", "")
				if code := symbolize(append([]string{"-e", path, bundle}, addrs...), nil, &got, &stderr); code != 0 {
					t.Fatalf("exit %d: %s", code, stderr.String())
				}
				wb, gb := blocks(string(want)), blocks(got.String())
				if len(wb) != len(gb) || len(gb) != len(addrs) {
					t.Fatalf("%d blocks, addr2line %d, addresses %d", len(gb), len(wb), len(addrs))
				}
				rowChoice := 0
				for i := range wb {
					if len(wb[i]) != len(gb[i]) {
						t.Errorf("%s: %d lines, addr2line %d:\n%s\n--\n%s", addrs[i], len(gb[i]), len(wb[i]),
							strings.Join(gb[i], "\n"), strings.Join(wb[i], "\n"))
						continue
					}
					firstLoc := 1 // index of the first file:line line
					if strings.Contains(bundle, "f") && !strings.Contains(bundle, "p") {
						firstLoc = 2
					}
					if strings.Contains(bundle, "p") {
						firstLoc = 0
					}
					for j := range wb[i] {
						w, g := wb[i][j], gb[i][j]
						switch {
						case w == g:
						case j == firstLoc && !strings.Contains(bundle, "p"):
							rowChoice++
						case strings.Contains(bundle, "p") && j == 0 && cloneRE.ReplaceAllString(w, "") != g:
							rowChoice++ // the pretty first line also holds the innermost location
						case cloneRE.ReplaceAllString(w, "") == g:
						default:
							t.Errorf("%s line %d: %q, addr2line %q", addrs[i], j, g, w)
						}
					}
				}
				t.Logf("%d addresses, %d where the innermost row differs (gdb's choice)", len(addrs), rowChoice)
			})
		}
	}
}

// TestSymbolizeStdinAndJSON: addresses from stdin; --json frames.
func TestSymbolizeStdinAndJSON(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c"}, Flags: []string{"-O2"}})
	addrs := programAddresses(t, path)
	var viaArgs, viaStdin, stderr bytes.Buffer
	if code := symbolize(append([]string{"-e", path, "-fiCa"}, addrs...), nil, &viaArgs, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	in := strings.Join(addrs, "\n") + "\n"
	if code := symbolize([]string{"-e", path, "-f", "-i", "-C", "-a"}, strings.NewReader(in), &viaStdin, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	if viaArgs.String() != viaStdin.String() {
		t.Fatal("stdin and argument output differ")
	}
	var js bytes.Buffer
	if code := symbolize(append([]string{"-e", path, "--json"}, addrs...), nil, &js, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	sc := bufio.NewScanner(&js)
	n, inlined := 0, 0
	for sc.Scan() {
		var obj struct {
			Address string
			Frames  []struct {
				Function, File string
				Line           int
				Inlined        bool
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("line %d: %v: %s", n, err, sc.Text())
		}
		if obj.Address != addrs[n] {
			t.Fatalf("object %d is for %s, want %s", n, obj.Address, addrs[n])
		}
		if len(obj.Frames) > 1 {
			inlined++
			if !obj.Frames[0].Inlined || obj.Frames[len(obj.Frames)-1].Inlined {
				t.Errorf("%s: inlined flags wrong: %+v", obj.Address, obj.Frames)
			}
		}
		n++
	}
	if n != len(addrs) || inlined == 0 {
		t.Fatalf("%d objects (%d with inline frames) for %d addresses", n, inlined, len(addrs))
	}
}

// TestSymbolizePID symbolizes a libc address of a running process: the
// answer must equal the answer for the matching link-time address of the
// libc file.
func TestSymbolizePID(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer cmd.Process.Kill()
	var libc string
	var maps string
	for i := 0; i < 100 && libc == ""; i++ {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", cmd.Process.Pid))
		maps = string(data)
		for _, l := range strings.Split(maps, "\n") {
			if f := strings.Fields(l); len(f) == 6 && strings.Contains(f[5], "/libc.so") {
				libc = f[5]
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if libc == "" {
		t.Skip("sleep maps no libc")
	}
	f, err := elf.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dyn, _ := f.DynamicSymbols()
	var link uint64
	for _, s := range dyn {
		if s.Name == "nanosleep" || s.Name == "clock_nanosleep" {
			link = s.Value + 4
		}
	}
	if link == 0 {
		t.Skip("no nanosleep in libc")
	}
	var fileOff uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && link >= p.Vaddr && link < p.Vaddr+p.Filesz {
			fileOff = link - p.Vaddr + p.Off
		}
	}
	var runtime uint64
	for _, l := range strings.Split(maps, "\n") {
		fl := strings.Fields(l)
		if len(fl) != 6 || fl[5] != libc {
			continue
		}
		lo, hi, _ := strings.Cut(fl[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(fl[2], 16, 64)
		if fileOff >= off && fileOff < off+(end-start) {
			runtime = start + fileOff - off
		}
	}
	if runtime == 0 {
		t.Fatalf("no mapping of %s holds file offset %#x", libc, fileOff)
	}
	var byPID, byFile, stderr bytes.Buffer
	if code := symbolize([]string{"--pid", strconv.Itoa(cmd.Process.Pid), "-fiC", fmt.Sprintf("%#x", runtime)}, nil, &byPID, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	if code := symbolize([]string{"-e", libc, "-fiC", fmt.Sprintf("%#x", link)}, nil, &byFile, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	// --pid spells files as `sonde stack` and gdb do; -e as addr2line.
	bin, err := symbols.Open(libc, symbolsOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	var want []string
	for _, l := range strings.Split(byFile.String(), "\n") {
		if file, line, ok := strings.Cut(l, ":"); ok && !strings.Contains(l, " ") {
			l = gdbFileAt(bin, link, file) + ":" + line
		}
		want = append(want, l)
	}
	if byPID.String() != strings.Join(want, "\n") || strings.HasPrefix(byPID.String(), "??") {
		t.Fatalf("--pid %#x:\n%s\n-e %s %#x (files as gdb spells them):\n%s", runtime, byPID.String(), libc, link, strings.Join(want, "\n"))
	}
	t.Logf("%s", byPID.String())

	// The same file as in `sonde stack`: frame 0 of the sleeping thread.
	waitForState(t, cmd.Process.Pid, 'S')
	st := sondeStacks(t, strconv.Itoa(cmd.Process.Pid))
	f0 := st.Threads[0].Frames[0]
	if f0.File == nil || f0.Line == nil {
		t.Skipf("no line for frame 0 (libc without debug information?): %+v", f0)
	}
	out, errOut, code := runCLI(t, "symbolize", "--pid", strconv.Itoa(cmd.Process.Pid), f0.PC)
	if wantLoc := fmt.Sprintf("%s:%d", *f0.File, *f0.Line); code != 0 || !strings.HasPrefix(out, wantLoc+"\n") && !strings.HasPrefix(out, wantLoc+" (discriminator") {
		t.Errorf("symbolize --pid %s: %q (exit %d, %s); sonde stack has %s", f0.PC, out, code, errOut, wantLoc)
	}
}

// TestSymbolizeWithoutDebugInfo: a stripped binary is named from its
// symbols, and stderr says once how to get the debug info.
func TestSymbolizeWithoutDebugInfo(t *testing.T) {
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c"}, Flags: []string{"-O2"}})
	stripped := t.TempDir() + "/stripped"
	if out, err := exec.Command("objcopy", "--strip-debug", path, stripped).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	addrs := programAddresses(t, path)[:50]
	var out, stderr bytes.Buffer
	if code := symbolize(append([]string{"-e", stripped, "-f"}, addrs...), nil, &out, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), "no debug information"); n != 1 {
		t.Errorf("hint printed %d times:\n%s", n, stderr.String())
	}
	if !strings.Contains(out.String(), "main\n??:?") && !strings.Contains(out.String(), "scale.constprop.0\n??:?") {
		t.Errorf("no symbol-table names:\n%s", out.String())
	}
}
