// Package disasm decodes and formats x86-64 machine code for sonde: the TCF
// Disassembly service, the CLI's listings and the run-control layer (which needs
// instruction lengths, call/return/jump classification and branch targets to step
// over calls and out of functions).
//
// It is built on golang.org/x/arch/x86/x86asm and guards against that decoder's
// gaps, found by comparing it with objdump instruction by instruction over gcc
// builds, libc, libm, libstdc++, gdb and perf (objdump_test.go keeps comparing):
// vzeroupper/vzeroall are mis-sized and disp32 and some RIP-relative operands
// are decoded wrongly (fixups.go); endbr64, rdpkru, adcx/adox, rdseed, AMD
// FMA4/XOP and a few alias encodings are unknown (fixups.go, synth.go). Bytes
// nothing can decode become a one-byte ".byte 0x.." pseudo-instruction, so a
// linear sweep always advances and never stalls.
//
// Text comes in two syntaxes: GNU/AT&T as `objdump -d` prints it and Intel as
// `objdump -d -M intel` prints it (x86asm's own spelling follows an older
// libopcodes; compat.go, legacy.go and memory.go bring it to objdump 2.40's),
// with branch targets and RIP-relative operands annotated through a Symbolizer
// the way objdump does (`call 0x401136 <foo>`, `# 0x404028 <counter>`).
// Operands are also returned structured (register, immediate, branch address,
// memory reference), so a protocol layer needs not re-parse the text.
//
// Because x86 instructions have no alignment, a listing must start at a known
// boundary: ListFrom and Containing decode forward from a function's entry.
package disasm

import (
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// MaxInstructionLen is the architectural limit on the length of one x86
// instruction; a decoder never needs more bytes than this to decide.
const MaxInstructionLen = 15

// Kind says how an Instruction was obtained.
type Kind uint8

const (
	// Decoded is an instruction x86asm decoded (possibly with its length or name
	// corrected by a fixup).
	Decoded Kind = iota
	// Named is a fixed-encoding instruction x86asm does not know (endbr64,
	// rdpkru, ...), recognised by its bytes.
	Named
	// Bad is a ".byte 0x.." pseudo-instruction for bytes that do not decode
	// (or are truncated at the end of the buffer); it is one byte long, except
	// for an AMD XOP instruction this package can size but not name.
	Bad
)

// Instruction is one decoded instruction.
type Instruction struct {
	// Address is where the instruction lives in the target.
	Address uint64
	// Len is the encoded length in bytes (1 to 15).
	Len int
	// Bytes is the encoding; it aliases the buffer passed to Decode.
	Bytes []byte
	// Kind says whether the instruction was decoded, recognised by name, or is
	// an undecodable byte.
	Kind Kind

	inst   x86asm.Inst // valid when Kind == Decoded
	rename string      // mnemonic replacing x86asm's for synthesized decodings (synth.go)
	lead   int         // bytes before the part x86asm decoded (a merged fwait)
	named  *namedInsn  // valid when Kind == Named
}

// Next returns the address of the instruction that follows in memory (the
// return address, for a call).
func (in *Instruction) Next() uint64 { return in.Address + uint64(in.Len) }

// Raw returns the x86asm decoding for callers that need details this package does
// not expose; ok is false for Named and Bad instructions.
func (in *Instruction) Raw() (inst x86asm.Inst, ok bool) {
	return in.inst, in.Kind == Decoded
}

// DecodeError reports bytes that cannot be decoded as an instruction. Decode
// returns it alongside a usable Bad pseudo-instruction.
type DecodeError struct {
	Address uint64
	Bytes   []byte // up to MaxInstructionLen bytes from Address
	Err     error  // the x86asm error (x86asm.ErrUnrecognized, ErrTruncated, ...)
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("disasm: cannot decode % x at %#x: %v", e.Bytes, e.Address, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ErrEmpty is returned by Decode when given no bytes at all.
var ErrEmpty = errors.New("disasm: no bytes to decode")

// Decode decodes the one instruction at the start of code, which lives at addr.
//
// It never fails to make progress: when the bytes do not decode (or the buffer
// ends inside an instruction), it returns a Bad one-byte pseudo-instruction
// together with a *DecodeError, so linear disassembly can show `.byte 0x..` and
// continue at the next byte. The only error without an instruction is ErrEmpty.
func Decode(code []byte, addr uint64) (Instruction, error) {
	if len(code) == 0 {
		return Instruction{Address: addr}, ErrEmpty
	}
	if n, size := matchNamed(code); n != nil {
		return Instruction{Address: addr, Len: size, Bytes: code[:size:size], Kind: Named, named: n}, nil
	}
	if maySynthesize(code) {
		if in, ok := synthesize(code, addr); ok {
			return in, nil
		}
	}
	inst, err := x86asm.Decode(code, 64)
	if err == nil {
		err = fixup(&inst, code)
	}
	if err != nil {
		if in, ok := decodeAlias(code, addr); ok {
			return in, nil
		}
	}
	if err != nil || inst.Len <= 0 || inst.Len > len(code) {
		if err == nil {
			err = x86asm.ErrTruncated
		}
		end := min(len(code), MaxInstructionLen)
		return badByte(code, addr), &DecodeError{Address: addr, Bytes: append([]byte(nil), code[:end]...), Err: err}
	}
	return Instruction{Address: addr, Len: inst.Len, Bytes: code[:inst.Len:inst.Len], Kind: Decoded, inst: inst}, nil
}

func badByte(code []byte, addr uint64) Instruction {
	return Instruction{Address: addr, Len: 1, Bytes: code[:1:1], Kind: Bad}
}

// Length returns the length of the instruction at the start of code, the way
// Decode sizes it: an undecodable or truncated instruction counts as 1 byte. It
// returns 0 only for an empty buffer.
func Length(code []byte) int {
	if len(code) == 0 {
		return 0
	}
	in, _ := Decode(code, 0)
	return in.Len
}

// DecodeAll decodes code (which lives at addr) linearly from its first byte to
// its end. Undecodable bytes become Bad pseudo-instructions, so the result
// always covers every byte exactly once.
func DecodeAll(code []byte, addr uint64) []Instruction {
	out := make([]Instruction, 0, len(code)/4+1)
	for off := 0; off < len(code); {
		in, _ := Decode(code[off:], addr+uint64(off))
		out = append(out, in)
		off += in.Len
	}
	return out
}
