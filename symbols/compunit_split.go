package symbols

// splitUnitNames completes what a split-DWARF skeleton unit leaves to its
// .dwo: GCC's skeleton has no DW_AT_name or DW_AT_producer, and gdb names
// the unit (and so prints its primary source file as given to the
// compiler, "liolib.c" rather than the compilation directory joined in
// front) from the split unit. A .dwo that cannot be found leaves u as the
// skeleton says.
func splitUnitNames(cu *compUnit, u *CompileUnit) {
	if u.Name != "" && u.Producer != "" || !cu.isSkeleton() {
		return
	}
	split, err := cu.dieUnit()
	if err != nil || split == nil || split == cu || split.readUnitDIE() != nil {
		return
	}
	if u.Name == "" {
		u.Name = split.name
	}
	if u.Producer == "" {
		u.Producer = split.producer
	}
	if u.CompDir == "" {
		u.CompDir = split.compDir
	}
}
