package symbols

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// build compiles a test program, skipping nothing: a missing compiler fails.
func build(t testing.TB, src string, flags ...string) string {
	t.Helper()
	return testprog.Build(t, testprog.Spec{Sources: []string{src}, Flags: flags})
}

func open(t testing.TB, path string) *Binary {
	t.Helper()
	b, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// crtFunctions are start-up code without DWARF in our test programs.
var crtFunctions = map[string]bool{"_start": true, "_init": true, "_fini": true, "deregister_tm_clones": true,
	"register_tm_clones": true, "__do_global_dtors_aux": true, "frame_dummy": true}

// codeAddresses returns every byte address of the program's own functions
// (ELF FUNC symbols with a size, start-up code excluded), sorted.
func codeAddresses(t testing.TB, path string) []uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	var out []uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Size == 0 || crtFunctions[s.Name] {
			continue
		}
		for a := s.Value; a < s.Value+s.Size; a++ {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// toolFrame is one frame as addr2line prints it.
type toolFrame struct {
	fn, file string
	line     int
}

var discRE = regexp.MustCompile(` \(discriminator \d+\)$`)

// addr2line runs binutils addr2line -f -i -C -a over addrs and returns the
// frames per address.
func addr2line(t testing.TB, path string, addrs []uint64) map[uint64][]toolFrame {
	t.Helper()
	if _, err := exec.LookPath("addr2line"); err != nil {
		t.Skip("addr2line not installed")
	}
	cmd := exec.Command("addr2line", "-e", path, "-f", "-i", "-C", "-a")
	var in strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&in, "%x\n", a)
	}
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	res := map[uint64][]toolFrame{}
	var cur uint64
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "0x") && len(l) == 18 {
			cur, _ = strconv.ParseUint(l[2:], 16, 64)
			res[cur] = nil
			continue
		}
		if i+1 >= len(lines) {
			break
		}
		loc := discRE.ReplaceAllString(lines[i+1], "")
		i++
		file, line := splitLoc(loc)
		res[cur] = append(res[cur], toolFrame{fn: l, file: file, line: line})
	}
	return res
}

func splitLoc(loc string) (string, int) {
	k := strings.LastIndexByte(loc, ':')
	if k < 0 {
		return loc, 0
	}
	n, _ := strconv.Atoi(loc[k+1:])
	file := loc[:k]
	if file == "??" {
		file = ""
	}
	return file, n
}

// gdbLines asks gdb for the line of each address ("info line *ADDR") and
// returns file (as gdb prints it) and line; line 0 when gdb has none.
func gdbLines(t testing.TB, path string, addrs []uint64) map[uint64]toolFrame {
	t.Helper()
	gdbtest.Need(t)
	script, err := os.CreateTemp(t.TempDir(), "cmds")
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(script)
	for _, a := range addrs {
		fmt.Fprintf(w, "info line *%#x\n", a)
	}
	w.Flush()
	script.Close()
	out := gdbtest.Batch(t, "-x", script.Name(), path)
	re := regexp.MustCompile(`^Line (\d+) of "([^"]+)"`)
	res := map[uint64]toolFrame{}
	i := 0
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "Line ") && !strings.HasPrefix(l, "No line") {
			continue
		}
		if i >= len(addrs) {
			break
		}
		var f toolFrame
		if m := re.FindStringSubmatch(l); m != nil {
			f.line, _ = strconv.Atoi(m[1])
			f.file = m[2]
		}
		res[addrs[i]] = f
		i++
	}
	if i != len(addrs) {
		t.Fatalf("gdb answered %d of %d addresses", i, len(addrs))
	}
	return res
}

// sameFile compares a full path with a path gdb printed (possibly relative).
func sameFile(full, other string) bool {
	other = strings.TrimPrefix(other, "./")
	return full == other || strings.HasSuffix(full, "/"+other)
}

// markerLine returns the line of testdata/src holding "LINE:name".
func markerLine(t testing.TB, src, name string) int {
	t.Helper()
	data, err := os.ReadFile(testprog.Source(src))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "LINE:"+name+"\n") || strings.HasSuffix(l, "LINE:"+name) {
			return i + 1
		}
	}
	t.Fatalf("no marker LINE:%s in %s", name, src)
	return 0
}

// gdbChains asks gdb (through its Python API) for the chain of function
// names at each address, innermost first, as gdb prints them.
func gdbChains(t testing.TB, path string, addrs []uint64) map[uint64][]string {
	t.Helper()
	gdbtest.Need(t)
	dir := t.TempDir()
	var list strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&list, "%d\n", a)
	}
	if err := os.WriteFile(dir+"/addrs", []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	py := `
import gdb
for line in open("` + dir + `/addrs"):
    pc = int(line)
    names = []
    try:
        b = gdb.block_for_pc(pc)
    except RuntimeError:
        b = None
    # Function blocks up the chain are inlined calls while they contain pc;
    # a function nested in another's DIE (a lambda) is not an inline frame.
    while b is not None:
        if b.function is not None:
            if names and not (b.start <= pc < b.end):
                break
            names.append(b.function.print_name)
        b = b.superblock
    print("CHAIN %d|%s" % (pc, "|".join(names)))
`
	out := gdbtest.Batch(t, "-ex", "source "+gdbtest.Script(t, "chain.py", py), path)
	res := map[uint64][]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "CHAIN ") {
			continue
		}
		parts := strings.Split(l[len("CHAIN "):], "|")
		pc, _ := strconv.ParseUint(parts[0], 10, 64)
		var names []string
		for _, n := range parts[1:] {
			if n != "" {
				names = append(names, n)
			}
		}
		res[pc] = names
	}
	if len(res) != len(addrs) {
		t.Fatalf("gdb answered %d of %d addresses:\n%s", len(res), len(addrs), out)
	}
	return res
}
