package arch

import "encoding/binary"

// XSAVE images in the standard (non-compacted) format put each extended state
// component at an offset the CPU reports through CPUID leaf 0xD, and vendors
// differ: Intel CPUs reserve room for the MPX components (3 and 4), AMD CPUs
// have none, so AVX-512's opmask, ZMM_Hi256 and Hi16_ZMM sit 256 bytes lower
// there. The kernel hands out (and core files record) the writing CPU's
// layout; the register table above uses Intel's. An XStateLayout says where
// the components of one image lie, so the backends can move them into the
// table's layout and back.

// XStateLayout gives the offset of each extended component (index 2..9) in an
// image; 0 means the image has no room for it.
type XStateLayout [10]int

// IntelXState is the layout the register table uses.
var IntelXState = XStateLayout{2: XSaveYMMHi, 3: 960, 4: 1024, 5: XSaveOpmask, 6: XSaveZMMHi256, 7: XSaveHi16ZMM, 9: 2688}

// XStateSize is the size of an image in the table's layout, through PKRU.
const XStateSize = 2696

// xcomponentSize is the size of each extended component.
var xcomponentSize = [10]int{2: 256, 3: 64, 4: 64, 5: 64, 6: 512, 7: 1024, 9: 8}

// XComponentSize returns the size of extended component c, 0 if unknown.
func XComponentSize(c int) int {
	if c < 0 || c >= len(xcomponentSize) {
		return 0
	}
	return xcomponentSize[c]
}

// InferXStateLayout works out the layout of an image whose CPU is unknown (a
// core file from another machine): the enabled components (XCR0, which Linux
// records in the image) at Intel's offsets when the image is large enough for
// them, else packed one after the other from offset 576 in component order, as
// CPUs without MPX lay them out, when the image's size fits that exactly.
func InferXStateLayout(image []byte) XStateLayout {
	if len(image) < XCR0Offset+8 {
		return IntelXState
	}
	xcr0 := binary.LittleEndian.Uint64(image[XCR0Offset:])
	intelEnd, packedEnd := XSaveYMMHi, XSaveYMMHi
	var packed XStateLayout
	for c := 2; c < len(xcomponentSize); c++ {
		if xcr0&(1<<uint(c)) == 0 || xcomponentSize[c] == 0 {
			continue
		}
		intelEnd = max(intelEnd, IntelXState[c]+xcomponentSize[c])
		packed[c] = packedEnd
		packedEnd += xcomponentSize[c]
	}
	if len(image) >= intelEnd || len(image) != packedEnd {
		return IntelXState
	}
	return packed
}

// ToArch returns image (in layout l) converted to the register table's layout.
func (l XStateLayout) ToArch(image []byte) []byte {
	out := make([]byte, max(XStateSize, len(image)))
	copy(out, image[:min(len(image), XSaveHeader+64)]) // legacy area and header are the same everywhere
	for c, off := range l {
		size, to := xcomponentSize[c], IntelXState[c]
		if off == 0 || size == 0 || off+size > len(image) {
			continue
		}
		copy(out[to:to+size], image[off:off+size])
	}
	return out
}

// FromArch writes a (in the table's layout) over image (in layout l), which
// keeps whatever the table does not describe, and returns image.
func (l XStateLayout) FromArch(a, image []byte) []byte {
	copy(image[:min(len(image), XSaveHeader+64)], a)
	for c, off := range l {
		size, from := xcomponentSize[c], IntelXState[c]
		if off == 0 || size == 0 || off+size > len(image) || from+size > len(a) {
			continue
		}
		copy(image[off:off+size], a[from:from+size])
	}
	return image
}
