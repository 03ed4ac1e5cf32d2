package target

import "fmt"

// FaultText describes a fault the kernel raised, from its siginfo's code
// and address, as the live backend's exception stops say it: "address not
// mapped at 0x10" (SIGSEGV's SEGV_MAPERR). "" for a signal that is no
// fault.
func FaultText(sig Signal, code int32, addr uint64) string {
	var names map[int32]string
	switch sig {
	case 11: // SIGSEGV
		names = map[int32]string{1: "address not mapped", 2: "invalid permissions for mapped object"}
	case 7: // SIGBUS
		names = map[int32]string{1: "invalid address alignment", 2: "nonexistent physical address", 3: "object-specific hardware error"}
	case 4: // SIGILL
		names = map[int32]string{1: "illegal opcode", 2: "illegal operand", 3: "illegal addressing mode", 4: "illegal trap", 5: "privileged opcode", 6: "privileged register", 7: "coprocessor error", 8: "internal stack error"}
	case 8: // SIGFPE
		names = map[int32]string{1: "integer divide by zero", 2: "integer overflow", 3: "floating-point divide by zero", 4: "floating-point overflow", 5: "floating-point underflow", 6: "floating-point inexact result", 7: "floating-point invalid operation", 8: "subscript out of range"}
	default:
		return ""
	}
	what := names[code]
	if what == "" {
		what = fmt.Sprintf("code %d", code)
	}
	return fmt.Sprintf("%s at 0x%x", what, addr)
}
