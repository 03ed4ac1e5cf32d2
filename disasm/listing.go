package disasm

import "fmt"

// x86 instructions have no alignment, so the only reliable way to find where
// the instruction containing an address starts is to decode forward from a
// known boundary. A function's entry point is one (it is what symbol tables
// and DWARF give), and it is what the C TCF agent uses too: its Disassembly
// service starts listings at the enclosing function's entry.

// AddressError reports an address outside the code given to ListFrom or
// Containing.
type AddressError struct {
	Address    uint64
	Start, End uint64 // the code's range [Start, End)
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("disasm: address %#x is outside the code at [%#x, %#x)", e.Address, e.Start, e.End)
}

// ListFrom decodes code, the bytes of a function starting at its entry point
// entry, and returns the instructions from the one containing addr to the end
// of code. The first instruction may start before addr when addr points into
// the middle of an instruction. Bytes that do not decode are listed as Bad
// pseudo-instructions, so the listing always covers the rest of code.
func ListFrom(code []byte, entry, addr uint64) ([]Instruction, error) {
	first, err := startOf(code, entry, addr)
	if err != nil {
		return nil, err
	}
	return DecodeAll(code[first-entry:], first), nil
}

// Containing returns the instruction of code (a function's bytes starting at
// its entry point entry) that contains addr.
func Containing(code []byte, entry, addr uint64) (Instruction, error) {
	first, err := startOf(code, entry, addr)
	if err != nil {
		return Instruction{}, err
	}
	in, _ := Decode(code[first-entry:], first)
	return in, nil
}

// startOf returns the address of the instruction containing addr, decoding
// lengths forward from entry.
func startOf(code []byte, entry, addr uint64) (uint64, error) {
	end := entry + uint64(len(code))
	if addr < entry || addr >= end || end < entry {
		return 0, &AddressError{Address: addr, Start: entry, End: end}
	}
	off := uint64(0)
	for {
		n := uint64(Length(code[off:]))
		if entry+off+n > addr {
			return entry + off, nil
		}
		off += n
	}
}
