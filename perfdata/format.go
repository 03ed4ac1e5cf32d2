package perfdata

// Record types (perf_event.h and perf's own session records).
const (
	RecordMmap          = 1
	RecordLost          = 2
	RecordComm          = 3
	RecordExit          = 4
	RecordThrottle      = 5
	RecordUnthrottle    = 6
	RecordFork          = 7
	RecordRead          = 8
	RecordSample        = 9
	RecordMmap2         = 10
	RecordAux           = 11
	RecordItraceStart   = 12
	RecordLostSamples   = 13
	RecordSwitch        = 14
	RecordSwitchCPUWide = 15

	RecordHeaderAttr        = 64
	RecordHeaderEventType   = 65
	RecordHeaderTracingData = 66
	RecordHeaderBuildID     = 67
	RecordFinishedRound     = 68
	RecordIDIndex           = 69
	RecordAuxtraceInfo      = 70
	RecordAuxtrace          = 71
	RecordAuxtraceError     = 72
	RecordThreadMap         = 73
	RecordCPUMap            = 74
	RecordEventUpdate       = 78
	RecordTimeConv          = 79
	RecordHeaderFeature     = 80
	RecordCompressed        = 81
	RecordFinishedInit      = 82
	RecordCompressed2       = 83
)

// Bits of perf_event_attr.sample_type: which fields a sample carries, in the
// order of the bits except PERF_SAMPLE_IDENTIFIER, which comes first.
const (
	SampleIP          = 1 << 0
	SampleTID         = 1 << 1
	SampleTime        = 1 << 2
	SampleAddr        = 1 << 3
	SampleRead        = 1 << 4
	SampleCallchain   = 1 << 5
	SampleID          = 1 << 6
	SampleCPU         = 1 << 7
	SamplePeriod      = 1 << 8
	SampleStreamID    = 1 << 9
	SampleRaw         = 1 << 10
	SampleBranchStack = 1 << 11
	SampleRegsUser    = 1 << 12
	SampleStackUser   = 1 << 13
	SampleWeight      = 1 << 14
	SampleDataSrc     = 1 << 15
	SampleIdentifier  = 1 << 16
	SampleTransaction = 1 << 17
	SampleRegsIntr    = 1 << 18
	SamplePhysAddr    = 1 << 19
	SampleAux         = 1 << 20
	SampleCgroup      = 1 << 21
	SampleDataPage    = 1 << 22
	SampleCodePage    = 1 << 23
	SampleWeightStruc = 1 << 24
)

// Bits of perf_event_attr.read_format.
const (
	readTotalTimeEnabled = 1 << 0
	readTotalTimeRunning = 1 << 1
	readID               = 1 << 2
	readGroup            = 1 << 3
	readLost             = 1 << 4
)

// Bits of perf_event_attr's flag word (offset 40) that change the layout.
const (
	flagSampleIDAll = 1 << 18
)

// branch_sample_type bits that change a sample's branch stack layout.
const (
	branchHWIndex  = 1 << 17
	branchCounters = 1 << 19
)

// Bits of a record header's misc field.
const (
	MiscCPUModeMask = 7
	MiscKernel      = 1
	MiscUser        = 2
	MiscHypervisor  = 3
	MiscGuestKernel = 4
	MiscGuestUser   = 5
	MiscCommExec    = 1 << 13 // COMM: the process exec'd
	MiscMmapData    = 1 << 13 // MMAP: a data (non-executable) mapping
	MiscMmapBuildID = 1 << 14 // MMAP2: the union holds a build-id
	MiscBuildIDSize = 1 << 15 // HEADER_BUILD_ID: byte 20 is the build-id length
)

// Context markers in a callchain: entries at or above ContextMax are not
// addresses but say whose frames follow.
const (
	ContextHV          = ^uint64(32 - 1)   // -32
	ContextKernel      = ^uint64(128 - 1)  // -128
	ContextUser        = ^uint64(512 - 1)  // -512
	ContextGuest       = ^uint64(2048 - 1) // -2048
	ContextGuestKernel = ^uint64(2176 - 1) // -2176
	ContextGuestUser   = ^uint64(2560 - 1) // -2560
	ContextMax         = ^uint64(4095 - 1) // -4095
)

// Feature bits of the file header's bitmap; each set bit has one section
// after the data, in bit order.
const (
	FeatureTracingData = 1
	FeatureBuildID     = 2
	FeatureHostname    = 3
	FeatureOSRelease   = 4
	FeatureVersion     = 5
	FeatureArch        = 6
	FeatureNrCPUs      = 7
	FeatureCPUDesc     = 8
	FeatureCPUID       = 9
	FeatureTotalMem    = 10
	FeatureCmdline     = 11
	FeatureEventDesc   = 12
	featureBits        = 256
)

// perf's numbering of the x86-64 user registers (arch/x86/include/uapi/asm/perf_regs.h),
// the bit numbers of sample_regs_user.
const (
	RegAX    = 0
	RegBX    = 1
	RegCX    = 2
	RegDX    = 3
	RegSI    = 4
	RegDI    = 5
	RegBP    = 6
	RegSP    = 7
	RegIP    = 8
	RegFlags = 9
	RegCS    = 10
	RegSS    = 11
	RegR8    = 16 // R8..R15 are 16..23
	RegR15   = 23
)

const (
	fileHeaderSize = 104
	pipeHeaderSize = 16
	// attrMin is the smallest perf_event_attr this reader understands
	// (PERF_ATTR_SIZE_VER1 is 72; the fields read here end at 110).
	attrMin = 72
	// attrMax bounds an attr entry: the kernel's struct is 136 bytes today.
	attrMax = 4096
	// maxIDsPerAttr bounds one attr's id array (one id per event per CPU or thread).
	maxIDsPerAttr = 1 << 20
	// maxSection bounds a header or feature section read in one piece.
	maxSection = 64 << 20
	// maxDecompressed bounds what one COMPRESSED record may expand to.
	maxDecompressed = 16 << 20
)
