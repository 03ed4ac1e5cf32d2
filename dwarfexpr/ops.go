package dwarfexpr

// DWARF expression operators (DWARF 5, section 7.7.1) and the GNU extensions
// that GCC and binutils emit. HP and other vendor operators that reuse the same
// codes are not recognised: on Linux the GNU meaning is the one in the wild.
const (
	OpAddr              = 0x03
	OpDeref             = 0x06
	OpConst1u           = 0x08
	OpConst1s           = 0x09
	OpConst2u           = 0x0a
	OpConst2s           = 0x0b
	OpConst4u           = 0x0c
	OpConst4s           = 0x0d
	OpConst8u           = 0x0e
	OpConst8s           = 0x0f
	OpConstu            = 0x10
	OpConsts            = 0x11
	OpDup               = 0x12
	OpDrop              = 0x13
	OpOver              = 0x14
	OpPick              = 0x15
	OpSwap              = 0x16
	OpRot               = 0x17
	OpXderef            = 0x18
	OpAbs               = 0x19
	OpAnd               = 0x1a
	OpDiv               = 0x1b
	OpMinus             = 0x1c
	OpMod               = 0x1d
	OpMul               = 0x1e
	OpNeg               = 0x1f
	OpNot               = 0x20
	OpOr                = 0x21
	OpPlus              = 0x22
	OpPlusUconst        = 0x23
	OpShl               = 0x24
	OpShr               = 0x25
	OpShra              = 0x26
	OpXor               = 0x27
	OpBra               = 0x28
	OpEq                = 0x29
	OpGe                = 0x2a
	OpGt                = 0x2b
	OpLe                = 0x2c
	OpLt                = 0x2d
	OpNe                = 0x2e
	OpSkip              = 0x2f
	OpLit0              = 0x30 // through OpLit0+31
	OpReg0              = 0x50 // through OpReg0+31
	OpBreg0             = 0x70 // through OpBreg0+31
	OpRegx              = 0x90
	OpFbreg             = 0x91
	OpBregx             = 0x92
	OpPiece             = 0x93
	OpDerefSize         = 0x94
	OpXderefSize        = 0x95
	OpNop               = 0x96
	OpPushObjectAddress = 0x97
	OpCall2             = 0x98
	OpCall4             = 0x99
	OpCallRef           = 0x9a
	OpFormTLSAddress    = 0x9b
	OpCallFrameCFA      = 0x9c
	OpBitPiece          = 0x9d
	OpImplicitValue     = 0x9e
	OpStackValue        = 0x9f
	OpImplicitPointer   = 0xa0
	OpAddrx             = 0xa1
	OpConstx            = 0xa2
	OpEntryValue        = 0xa3
	OpConstType         = 0xa4
	OpRegvalType        = 0xa5
	OpDerefType         = 0xa6
	OpXderefType        = 0xa7
	OpConvert           = 0xa8
	OpReinterpret       = 0xa9

	OpGNUPushTLSAddress  = 0xe0
	OpGNUUninit          = 0xf0
	OpGNUEncodedAddr     = 0xf1
	OpGNUImplicitPointer = 0xf2
	OpGNUEntryValue      = 0xf3
	OpGNUConstType       = 0xf4
	OpGNURegvalType      = 0xf5
	OpGNUDerefType       = 0xf6
	OpGNUConvert         = 0xf7
	OpGNUReinterpret     = 0xf9
	OpGNUParameterRef    = 0xfa
	OpGNUAddrIndex       = 0xfb
	OpGNUConstIndex      = 0xfc
	OpGNUVariableValue   = 0xfd
)

// Base type encodings (DW_ATE_*) that typed stack operations understand.
const (
	EncodingAddress      = 0x01
	EncodingBoolean      = 0x02
	EncodingFloat        = 0x04
	EncodingSigned       = 0x05
	EncodingSignedChar   = 0x06
	EncodingUnsigned     = 0x07
	EncodingUnsignedChar = 0x08
	EncodingUTF          = 0x10
)

var opNames = map[byte]string{
	OpAddr: "DW_OP_addr", OpDeref: "DW_OP_deref", OpConst1u: "DW_OP_const1u", OpConst1s: "DW_OP_const1s",
	OpConst2u: "DW_OP_const2u", OpConst2s: "DW_OP_const2s", OpConst4u: "DW_OP_const4u", OpConst4s: "DW_OP_const4s",
	OpConst8u: "DW_OP_const8u", OpConst8s: "DW_OP_const8s", OpConstu: "DW_OP_constu", OpConsts: "DW_OP_consts",
	OpDup: "DW_OP_dup", OpDrop: "DW_OP_drop", OpOver: "DW_OP_over", OpPick: "DW_OP_pick", OpSwap: "DW_OP_swap",
	OpRot: "DW_OP_rot", OpXderef: "DW_OP_xderef", OpAbs: "DW_OP_abs", OpAnd: "DW_OP_and", OpDiv: "DW_OP_div",
	OpMinus: "DW_OP_minus", OpMod: "DW_OP_mod", OpMul: "DW_OP_mul", OpNeg: "DW_OP_neg", OpNot: "DW_OP_not",
	OpOr: "DW_OP_or", OpPlus: "DW_OP_plus", OpPlusUconst: "DW_OP_plus_uconst", OpShl: "DW_OP_shl",
	OpShr: "DW_OP_shr", OpShra: "DW_OP_shra", OpXor: "DW_OP_xor", OpBra: "DW_OP_bra", OpEq: "DW_OP_eq",
	OpGe: "DW_OP_ge", OpGt: "DW_OP_gt", OpLe: "DW_OP_le", OpLt: "DW_OP_lt", OpNe: "DW_OP_ne", OpSkip: "DW_OP_skip",
	OpRegx: "DW_OP_regx", OpFbreg: "DW_OP_fbreg", OpBregx: "DW_OP_bregx", OpPiece: "DW_OP_piece",
	OpDerefSize: "DW_OP_deref_size", OpXderefSize: "DW_OP_xderef_size", OpNop: "DW_OP_nop",
	OpPushObjectAddress: "DW_OP_push_object_address", OpCall2: "DW_OP_call2", OpCall4: "DW_OP_call4",
	OpCallRef: "DW_OP_call_ref", OpFormTLSAddress: "DW_OP_form_tls_address", OpCallFrameCFA: "DW_OP_call_frame_cfa",
	OpBitPiece: "DW_OP_bit_piece", OpImplicitValue: "DW_OP_implicit_value", OpStackValue: "DW_OP_stack_value",
	OpImplicitPointer: "DW_OP_implicit_pointer", OpAddrx: "DW_OP_addrx", OpConstx: "DW_OP_constx",
	OpEntryValue: "DW_OP_entry_value", OpConstType: "DW_OP_const_type", OpRegvalType: "DW_OP_regval_type",
	OpDerefType: "DW_OP_deref_type", OpXderefType: "DW_OP_xderef_type", OpConvert: "DW_OP_convert",
	OpReinterpret: "DW_OP_reinterpret", OpGNUPushTLSAddress: "DW_OP_GNU_push_tls_address",
	OpGNUUninit: "DW_OP_GNU_uninit", OpGNUEncodedAddr: "DW_OP_GNU_encoded_addr",
	OpGNUImplicitPointer: "DW_OP_GNU_implicit_pointer", OpGNUEntryValue: "DW_OP_GNU_entry_value",
	OpGNUConstType: "DW_OP_GNU_const_type", OpGNURegvalType: "DW_OP_GNU_regval_type",
	OpGNUDerefType: "DW_OP_GNU_deref_type", OpGNUConvert: "DW_OP_GNU_convert",
	OpGNUReinterpret: "DW_OP_GNU_reinterpret", OpGNUParameterRef: "DW_OP_GNU_parameter_ref",
	OpGNUAddrIndex: "DW_OP_GNU_addr_index", OpGNUConstIndex: "DW_OP_GNU_const_index",
	OpGNUVariableValue: "DW_OP_GNU_variable_value",
}

// OpName returns the DW_OP_* name of op, for error messages and dumps.
func OpName(op byte) string {
	switch {
	case op >= OpLit0 && op < OpLit0+32:
		return "DW_OP_lit" + itoa(int(op-OpLit0))
	case op >= OpReg0 && op < OpReg0+32:
		return "DW_OP_reg" + itoa(int(op-OpReg0))
	case op >= OpBreg0 && op < OpBreg0+32:
		return "DW_OP_breg" + itoa(int(op-OpBreg0))
	}
	if n, ok := opNames[op]; ok {
		return n
	}
	return "DW_OP_0x" + hex2(op)
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

func hex2(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}
