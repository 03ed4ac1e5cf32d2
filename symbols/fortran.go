package symbols

import "strings"

// tagModule is DW_TAG_module: a Fortran module (GCC's gfortran puts a
// module's procedures and variables under it). gdb names a module procedure
// by its DWARF name qualified with the module's, m::deep (not by the ELF
// symbol __m_MOD_deep), so the scope walk treats a module as it treats a
// namespace.
const tagModule = 0x1e

// fortran reports whether the unit is Fortran (gfortran's or flang's
// producer): its procedures keep their DWARF names (m::deep), where a C
// function's unmangled linkage name (glibc's __GI_ aliases) is what gdb
// prints.
func (cu *compUnit) fortran() bool {
	p := cu.producer
	return strings.HasPrefix(p, "GNU Fortran") || strings.Contains(p, "flang")
}
