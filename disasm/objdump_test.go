package disasm

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

	"github.com/sondedbg/sonde/internal/testprog"
)

// The tests in this file decode the whole .text section of real programs and of
// libc and compare every instruction with objdump: the instruction boundaries
// must agree exactly; text differences are counted per category and must be on
// the documented list of cosmetic ones (cosmeticMnemonics).

// objdumpInsn is one line of `objdump -d` output.
type objdumpInsn struct {
	addr uint64
	size int
	text string // the disassembly, objdump's spelling
}

// parseObjdumpLine splits a line of `objdump -d` that lists an
// instruction ("  addr:\tbytes \ttext") into its address, its byte count
// and its text; false for any other line (headers, labels, blank lines).
func parseObjdumpLine(l string) (objdumpInsn, bool) {
	l = strings.TrimLeft(l, " \t\n\f\r\v")
	colon := strings.Index(l, ":\t")
	if colon <= 0 || !isLowerHex(l[:colon]) {
		return objdumpInsn{}, false
	}
	rest := l[colon+2:]
	tab := strings.IndexByte(rest, '\t')
	if tab < 0 {
		return objdumpInsn{}, false
	}
	bytesPart := strings.TrimRight(rest[:tab], " \t\n\f\r\v")
	if bytesPart == "" || strings.Trim(bytesPart, "0123456789abcdef ") != "" {
		return objdumpInsn{}, false
	}
	addr, err := strconv.ParseUint(l[:colon], 16, 64)
	if err != nil {
		return objdumpInsn{}, false
	}
	return objdumpInsn{addr: addr, size: len(strings.Fields(bytesPart)), text: rest[tab+1:]}, true
}

func isLowerHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdef") == ""
}

// runObjdump disassembles the .text section of path.
func runObjdump(t testing.TB, path string, syntax Syntax) []objdumpInsn {
	t.Helper()
	args := []string{"-d", "-z", "--insn-width=15", "-j", ".text"}
	if syntax == Intel {
		args = append(args, "-M", "intel")
	}
	// Read as objdump writes it: libc's listing is ~40 MB.
	cmd := exec.Command("objdump", append(args, path)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("objdump %s: %v", path, err)
	}
	var insns []objdumpInsn
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if in, ok := parseObjdumpLine(sc.Text()); ok {
			insns = append(insns, in)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("objdump %s: %v", path, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("objdump %s: %v", path, err)
	}
	if len(insns) == 0 {
		t.Fatalf("objdump printed no instructions for %s", path)
	}
	return insns
}

// textSection returns the bytes and address of path's .text section.
func textSection(t testing.TB, path string) ([]byte, uint64, *elf.File) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := f.Section(".text")
	if s == nil {
		t.Fatalf("%s has no .text", path)
	}
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	return data, s.Addr, f
}

// elfSymbolizer names addresses by the nearest preceding function or object
// symbol, as objdump does.
func elfSymbolizer(f *elf.File) Symbolizer {
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		ss, _ := get()
		for _, s := range ss {
			if typ := elf.ST_TYPE(s.Info); (typ == elf.STT_FUNC || typ == elf.STT_OBJECT) && s.Value != 0 {
				syms = append(syms, sym{s.Value, s.Name})
			}
		}
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	return func(addr uint64) (string, uint64, bool) {
		i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > addr }) - 1
		if i < 0 {
			return "", 0, false
		}
		return syms[i].name, addr - syms[i].addr, true
	}
}

// objdumpPrefixes are the words objdump prints before a mnemonic.
func isObjdumpPrefix(w string) bool {
	return isPrefixWord(w) || w == "{vex}" || w == "{evex}" || w == "{vex3}"
}

// objdumpMnemonic returns objdump's prefixes and mnemonic.
func objdumpMnemonic(text string) string {
	words := strings.Fields(stripAnnotations(text))
	for i, w := range words {
		if !isObjdumpPrefix(w) {
			return strings.Join(words[:i+1], " ")
		}
	}
	return strings.Join(words, " ")
}

var (
	annotation = regexp.MustCompile(` <[^>]*>`)
	comment    = regexp.MustCompile(`\s+#.*$`)
	ripNeg     = regexp.MustCompile(`rip\+0x(f{8}[0-9a-f]{8})\]`)
)

// stripAnnotations removes symbol annotations and comments, which depend on the
// symbolizer. (The checks before the expressions skip them on the lines
// without either: most of the ~10^6 lines a library's comparison reads.)
func stripAnnotations(s string) string {
	if strings.Contains(s, " <") {
		s = annotation.ReplaceAllString(s, "")
	}
	if strings.Contains(s, "#") {
		s = comment.ReplaceAllString(s, "")
	}
	return s
}

// oneSpace trims s and writes each run of white space in it as one space.
func oneSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// normalizeObjdump turns objdump's text into this package's spelling for the
// cosmetic differences documented on Text: branch targets carry 0x, a negative
// RIP-relative displacement in Intel syntax is written as one (`[rip-0x16e]`,
// objdump: `[rip+0xfffffffffffffe92]`), whitespace runs are one space.
func normalizeObjdump(s string) string {
	s = oneSpace(stripAnnotations(s))
	s = strings.TrimPrefix(s, "{evex} ")
	if !strings.Contains(s, "rip+0xffffffff") {
		return hexTargetWith0x(s)
	}
	s = ripNeg.ReplaceAllStringFunc(s, func(m string) string {
		v, err := strconv.ParseUint(ripNeg.FindStringSubmatch(m)[1], 16, 64)
		if err != nil {
			return m
		}
		return "rip-0x" + strconv.FormatUint(-v, 16) + "]"
	})
	return hexTargetWith0x(s)
}

// hexTargetWith0x writes a last operand of bare hex digits (objdump's
// branch targets) with 0x, in s whose spaces are single.
func hexTargetWith0x(s string) string {
	if i := strings.LastIndexByte(s, ' '); i >= 0 && isLowerHex(s[i+1:]) {
		return s[:i+1] + "0x" + s[i+1:]
	}
	return s
}

func normalizeOurs(s string) string {
	return oneSpace(stripAnnotations(s))
}

// comparison accumulates the result of comparing with objdump.
type comparison struct {
	insns, sizeMismatch, textMatch, mnemonicMatch, cosmetic int
	sizeCats, mnemCats, textCats                            map[string]int
	examples                                                map[string]string
}

func (c *comparison) add(cats map[string]int, key string, example func() string) {
	cats[key]++
	if _, ok := c.examples[key]; !ok {
		c.examples[key] = example()
	}
}

// compareWithObjdump decodes every instruction objdump lists at objdump's
// address and compares size, mnemonic and text. listing is objdump's in
// syntax (runObjdump), nil to run it here.
func compareWithObjdump(t testing.TB, path string, syntax Syntax, listing []objdumpInsn) *comparison {
	code, base, _ := textSection(t, path)
	c := &comparison{sizeCats: map[string]int{}, mnemCats: map[string]int{}, textCats: map[string]int{}, examples: map[string]string{}}
	if listing == nil {
		listing = runObjdump(t, path, syntax)
	}
	for _, od := range listing {
		if od.addr < base || od.addr-base >= uint64(len(code)) {
			t.Fatalf("objdump address %#x outside .text", od.addr)
		}
		in, _ := Decode(code[od.addr-base:], od.addr)
		c.insns++
		odMnem := objdumpMnemonic(od.text)
		text := in.Text(syntax, nil)
		// Written only for a difference: it is most of the loop's cost.
		example := func() string {
			return fmt.Sprintf("%#x % x: objdump %q, ours %q", od.addr, code[od.addr-base:od.addr-base+uint64(od.size)], od.text, text)
		}
		if in.Len != od.size && !(od.text == "(bad)" && in.Kind == Bad) {
			c.sizeMismatch++
			c.add(c.sizeCats, odMnem, example)
			continue
		}
		ours := in.Mnemonic(syntax)
		if ours == odMnem {
			c.mnemonicMatch++
		} else if isCosmetic(syntax, odMnem, ours) {
			c.cosmetic++
		} else {
			c.add(c.mnemCats, odMnem+" / "+ours, example)
		}
		if normalizeObjdump(od.text) == normalizeOurs(text) {
			c.textMatch++
		} else {
			c.add(c.textCats, odMnem, example)
		}
	}
	return c
}

func (c *comparison) report(t testing.TB, name string) {
	pct := func(n int) float64 { return 100 * float64(n) / float64(c.insns) }
	t.Logf("%s: %d instructions; sizes differ %d; mnemonic identical %.3f%%, cosmetic alias %.3f%%, other %.3f%%; full text identical %.2f%% (%d differ)",
		name, c.insns, c.sizeMismatch, pct(c.mnemonicMatch), pct(c.cosmetic), pct(c.insns-c.sizeMismatch-c.mnemonicMatch-c.cosmetic), pct(c.textMatch), c.insns-c.textMatch)
	logTop := func(title string, cats map[string]int, max int) {
		keys := make([]string, 0, len(cats))
		for k := range cats {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return cats[keys[i]] > cats[keys[j]] })
		for i, k := range keys {
			if i == max {
				t.Logf("  %s: %d more categories", title, len(keys)-max)
				break
			}
			t.Logf("  %s %q x%d, e.g. %s", title, k, cats[k], c.examples[k])
		}
	}
	logTop("size", c.sizeCats, 50)
	logTop("mnemonic", c.mnemCats, 50)
	if os.Getenv("DISASM_VERBOSE") != "" {
		logTop("text", c.textCats, 200)
	}
}

// cosmeticMnemonics are the documented mnemonic differences from objdump that
// do not change meaning: objdump's name for undecodable bytes. Besides these,
// objdump marks some EVEX encodings of instructions that also have a VEX form
// with an "{evex}" pseudo-prefix, which this package does not (it would need
// a table of which EVEX instructions have VEX twins).
var cosmeticMnemonics = map[string]string{
	"(bad)": ".byte",
}

func isCosmetic(syntax Syntax, objdump, ours string) bool {
	return cosmeticMnemonics[objdump] == ours || strings.TrimPrefix(objdump, "{evex} ") == ours
}

// checkLinearSweep decodes the whole .text linearly and requires exactly
// objdump's instruction addresses (valid for sections without data in them,
// as gcc output and libc are: objdump restarts at every symbol, a linear sweep
// does not). theirs is objdump's GNU listing of path (runObjdump).
func checkLinearSweep(t *testing.T, path string, theirs []objdumpInsn) {
	code, base, _ := textSection(t, path)
	ours := DecodeAll(code, base)
	for i := 0; i < len(ours) && i < len(theirs); i++ {
		if ours[i].Address != theirs[i].addr {
			t.Fatalf("%s: linear sweep desynchronised at instruction %d: ours at %#x (%s), objdump at %#x (%s)",
				path, i, ours[i].Address, ours[i].Text(GNU, nil), theirs[i].addr, theirs[i].text)
		}
	}
	if len(ours) != len(theirs) {
		t.Fatalf("%s: linear sweep found %d instructions, objdump %d", path, len(ours), len(theirs))
	}
	checkPCRelative(t, ours)
}

// checkPCRelative reads every PC-relative field PCRelative locates and
// requires it to give the instruction's branch or memory target.
func checkPCRelative(t *testing.T, list []Instruction) {
	n := 0
	for i := range list {
		in := &list[i]
		off, size, ok := in.PCRelative()
		if !ok {
			continue
		}
		n++
		var v int64
		switch size {
		case 1:
			v = int64(int8(in.Bytes[off]))
		case 4:
			b := in.Bytes[off : off+4]
			v = int64(int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24))
		}
		want, ok := in.BranchTarget()
		if !ok {
			want, _ = in.MemoryTarget()
		}
		if in.Next()+uint64(v) != want {
			t.Fatalf("%#x %s: PC-relative field %d bytes at %d gives %#x, target %#x", in.Address, in.Text(GNU, nil), size, off, in.Next()+uint64(v), want)
		}
	}
	if n == 0 {
		t.Errorf("no PC-relative instruction found")
	}
}

// checkComparison fails on any size mismatch and any mnemonic mismatch that is
// not cosmetic, and requires the full text to match at least minText percent.
func checkComparison(t *testing.T, name string, c *comparison, minText float64) {
	c.report(t, name)
	if c.sizeMismatch != 0 {
		t.Errorf("%s: %d instructions sized differently from objdump", name, c.sizeMismatch)
	}
	if n := c.insns - c.sizeMismatch - c.mnemonicMatch - c.cosmetic; n != 0 {
		t.Errorf("%s: %d mnemonics differ from objdump beyond the cosmetic list", name, n)
	}
	if pct := 100 * float64(c.textMatch) / float64(c.insns); pct < minText {
		t.Errorf("%s: only %.2f%% of instruction texts match objdump's (want >= %.2f%%)", name, pct, minText)
	}
}

// testPrograms are the gcc builds compared with objdump; mustContain names
// instructions whose presence makes the build worth comparing.
var testPrograms = []struct {
	name        string
	spec        testprog.Spec
	mustContain string
}{
	{"mix-O0", testprog.Spec{Sources: []string{"dis_mix.c"}, Flags: []string{"-O0"}, Name: "dis_mix_O0"}, "call"},
	{"mix-O2", testprog.Spec{Sources: []string{"dis_mix.c"}, Flags: []string{"-O2"}, Name: "dis_mix_O2"}, "lock"},
	{"mix-O2-cet", testprog.Spec{Sources: []string{"dis_mix.c"}, Flags: []string{"-O2", "-fcf-protection=full"}, Name: "dis_mix_cet"}, "endbr64"},
	{"avx2-O3", testprog.Spec{Sources: []string{"dis_avx.c"}, Flags: []string{"-O3", "-mavx2"}, Name: "dis_avx"}, "vzeroupper"},
}

func TestProgramsAgainstObjdump(t *testing.T) {
	requireObjdump(t)
	for _, p := range testPrograms {
		t.Run(p.name, func(t *testing.T) {
			path := testprog.Build(t, p.spec)
			gnu := runObjdump(t, path, GNU)
			checkComparison(t, p.name+" "+GNU.String(), compareWithObjdump(t, path, GNU, gnu), 100)
			checkComparison(t, p.name+" "+Intel.String(), compareWithObjdump(t, path, Intel, nil), 100)
			checkLinearSweep(t, path, gnu)
			code, base, _ := textSection(t, path)
			found := false
			for _, in := range DecodeAll(code, base) {
				if strings.Contains(in.Mnemonic(GNU), p.mustContain) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: no %s instruction: the build does not exercise what it should", p.name, p.mustContain)
			}
		})
	}
}

// The system libraries: libc (hand-written AVX2/AVX-512 string functions,
// vzeroupper, rdpkru/wrpkru, x87), libm (SSE, AVX, FMA and AMD FMA4 code) and,
// where installed, libdav1d (hand-written AVX2/AVX-512 video code: broadcasts,
// mask registers, VNNI).
func TestSystemLibrariesAgainstObjdump(t *testing.T) {
	requireObjdump(t)
	if testing.Short() {
		t.Skip("-short: comparing the system libraries decodes ~450,000 instructions twice")
	}
	for _, lib := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libdav1d.so.6"} {
		if _, err := os.Stat(lib); err != nil {
			t.Logf("%s: not present on this machine", lib)
			continue
		}
		t.Run(lib, func(t *testing.T) {
			gnu := runObjdump(t, lib, GNU)
			checkComparison(t, lib+" gnu", compareWithObjdump(t, lib, GNU, gnu), 100)
			checkComparison(t, lib+" intel", compareWithObjdump(t, lib, Intel, nil), 100)
			checkLinearSweep(t, lib, gnu)
		})
	}
}

func requireObjdump(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("objdump not installed: nothing to compare with")
	}
}
