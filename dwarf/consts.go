package dwarf

// The DWARF constants this package and its callers use (DWARF 5 names, with
// the GNU extensions GCC emits for split DWARF and dwz).

// Tags.
const (
	TagClassType         = 0x02
	TagEnumerationType   = 0x04
	TagLexicalBlock      = 0x0b
	TagCompileUnit       = 0x11
	TagStructureType     = 0x13
	TagUnionType         = 0x17
	TagInlinedSubroutine = 0x1d
	TagModule            = 0x1e
	TagSubprogram        = 0x2e
	TagVariable          = 0x34
	TagNamespace         = 0x39
	TagPartialUnit       = 0x3c
	TagImportedUnit      = 0x3d
	TagTypeUnit          = 0x41
	TagSkeletonUnit      = 0x4a
)

// Attributes.
const (
	AttrSibling         = 0x01
	AttrLocation        = 0x02
	AttrName            = 0x03
	AttrStmtList        = 0x10
	AttrLowPC           = 0x11
	AttrHighPC          = 0x12
	AttrCompDir         = 0x1b
	AttrInline          = 0x20
	AttrProducer        = 0x25
	AttrAbstractOrigin  = 0x31
	AttrDeclaration     = 0x3c
	AttrExternal        = 0x3f
	AttrSpecification   = 0x47
	AttrImport          = 0x18
	AttrRanges          = 0x55
	AttrCallColumn      = 0x57
	AttrCallFile        = 0x58
	AttrCallLine        = 0x59
	AttrSignature       = 0x69
	AttrMainSubprogram  = 0x6a
	AttrLinkageName     = 0x6e
	AttrStrOffsetsBase  = 0x72
	AttrAddrBase        = 0x73
	AttrRnglistsBase    = 0x74
	AttrDwoName         = 0x76
	AttrLoclistsBase    = 0x8c
	AttrMIPSLinkageName = 0x2007
	AttrGNUDwoName      = 0x2130
	AttrGNUDwoID        = 0x2131
	AttrGNURangesBase   = 0x2132
	AttrGNUAddrBase     = 0x2133
)

// Forms.
const (
	formAddr          = 0x01
	formBlock2        = 0x03
	formBlock4        = 0x04
	formData2         = 0x05
	formData4         = 0x06
	formData8         = 0x07
	formString        = 0x08
	formBlock         = 0x09
	formBlock1        = 0x0a
	formData1         = 0x0b
	formFlag          = 0x0c
	formSdata         = 0x0d
	formStrp          = 0x0e
	formUdata         = 0x0f
	formRefAddr       = 0x10
	formRef1          = 0x11
	formRef2          = 0x12
	formRef4          = 0x13
	formRef8          = 0x14
	formRefUdata      = 0x15
	formIndirect      = 0x16
	formSecOffset     = 0x17
	formExprloc       = 0x18
	formFlagPresent   = 0x19
	formStrx          = 0x1a
	formAddrx         = 0x1b
	formRefSup4       = 0x1c
	formStrpSup       = 0x1d
	formData16        = 0x1e
	formLineStrp      = 0x1f
	formRefSig8       = 0x20
	formImplicitConst = 0x21
	formLoclistx      = 0x22
	formRnglistx      = 0x23
	formRefSup8       = 0x24
	formStrx1         = 0x25
	formStrx2         = 0x26
	formStrx3         = 0x27
	formStrx4         = 0x28
	formAddrx1        = 0x29
	formAddrx2        = 0x2a
	formAddrx3        = 0x2b
	formAddrx4        = 0x2c
	formGNUAddrIndex  = 0x1f01
	formGNUStrIndex   = 0x1f02
	formGNURefAlt     = 0x1f20
	formGNUStrpAlt    = 0x1f21
)

// Unit types of DWARF 5 unit headers.
const (
	UnitCompile      = 1
	UnitType         = 2
	UnitPartial      = 3
	UnitSkeleton     = 4
	UnitSplitCompile = 5
	UnitSplitType    = 6
)
