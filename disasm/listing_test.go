package disasm

import (
	"debug/elf"
	"errors"
	"regexp"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// functionCode returns the bytes and entry of the named function in path.
func functionCode(t *testing.T, path, name string) ([]byte, uint64) {
	t.Helper()
	text, base, f := textSection(t, path)
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			if s.Value < base || s.Value+s.Size > base+uint64(len(text)) {
				t.Fatalf("%s is outside .text", name)
			}
			return text[s.Value-base : s.Value-base+s.Size], s.Value
		}
	}
	t.Fatalf("no function %s in %s", name, path)
	return nil, 0
}

// TestListFromEveryAddress asks for a listing at every byte of real functions
// (including the middle of instructions) and checks it starts at the
// instruction objdump shows containing that byte and then follows objdump.
func TestListFromEveryAddress(t *testing.T) {
	requireObjdump(t)
	path := testprog.Build(t, testPrograms[1].spec) // -O2: pick has a jump table, main calls
	all := runObjdump(t, path, GNU)
	for _, fn := range []string{"main", "pick", "mix64"} {
		code, entry := functionCode(t, path, fn)
		var want []objdumpInsn
		for _, od := range all {
			if od.addr >= entry && od.addr < entry+uint64(len(code)) {
				want = append(want, od)
			}
		}
		if len(want) == 0 {
			t.Fatalf("objdump lists nothing in %s", fn)
		}
		k := 0
		for addr := entry; addr < entry+uint64(len(code)); addr++ {
			for k+1 < len(want) && want[k+1].addr <= addr {
				k++
			}
			list, err := ListFrom(code, entry, addr)
			if err != nil {
				t.Fatalf("ListFrom(%s, %#x): %v", fn, addr, err)
			}
			if len(list) != len(want)-k {
				t.Fatalf("ListFrom(%s, %#x): %d instructions, objdump has %d from there", fn, addr, len(list), len(want)-k)
			}
			for j := range list {
				if list[j].Address != want[k+j].addr || list[j].Len != want[k+j].size {
					t.Fatalf("ListFrom(%s, %#x)[%d] at %#x len %d, objdump at %#x len %d", fn, addr, j,
						list[j].Address, list[j].Len, want[k+j].addr, want[k+j].size)
				}
			}
			in, err := Containing(code, entry, addr)
			if err != nil || in.Address != want[k].addr {
				t.Fatalf("Containing(%s, %#x) = %#x, %v; want %#x", fn, addr, in.Address, err, want[k].addr)
			}
		}
	}
}

func TestListFromOutside(t *testing.T) {
	code := []byte{0x55, 0x48, 0x89, 0xe5, 0xc3}
	for _, addr := range []uint64{0xfff, 0x1005, 0} {
		_, err := ListFrom(code, 0x1000, addr)
		var ae *AddressError
		if !errors.As(err, &ae) || ae.Address != addr || ae.Start != 0x1000 || ae.End != 0x1005 {
			t.Errorf("ListFrom(%#x): %v, want an AddressError", addr, err)
		}
	}
	if _, err := Containing(nil, 0x1000, 0x1000); err == nil {
		t.Error("Containing in empty code: no error")
	}
}

var (
	objdumpAddr = regexp.MustCompile(`(^[a-z]+\s+|# )([0-9a-f]+) <`)
	ownSymbol   = regexp.MustCompile(`<(leaf|pick|mean|mix64|bump|scale|counter|weights|names|hits)(\+0x[0-9a-f]+)?>`)
)

// TestSymbolizedAgainstObjdump compares symbol annotations of calls, jumps
// and RIP-relative operands in a real -O0 program with objdump's, using the
// program's own symbol table.
func TestSymbolizedAgainstObjdump(t *testing.T) {
	requireObjdump(t)
	for _, syn := range []Syntax{GNU, Intel} {
		path := testprog.Build(t, testPrograms[0].spec)
		code, base, f := textSection(t, path)
		sym := elfSymbolizer(f)
		checked := map[string]int{}
		for _, od := range runObjdump(t, path, syn) {
			m := ownSymbol.FindStringSubmatch(od.text)
			if m == nil {
				continue
			}
			in, _ := Decode(code[od.addr-base:], od.addr)
			want := objdumpAddr.ReplaceAllString(od.text, "${1}0x${2} <")
			if got := in.Text(syn, sym); got != want {
				t.Errorf("%s at %#x: %q, objdump %q", syn, od.addr, got, want)
			}
			checked[m[1]]++
		}
		for _, name := range []string{"leaf", "pick", "counter", "weights"} {
			if checked[name] == 0 {
				t.Errorf("%s: no instruction refers to %s; the program no longer exercises symbolization (%v)", syn, name, checked)
			}
		}
		t.Logf("%s: annotations checked: %v", syn, checked)
	}
}
