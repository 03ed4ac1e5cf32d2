package variables

// PrepareUnitAt indexes, ahead of a first stop, the functions of the units
// holding the link-time pc (the index the first ScopesAt there builds:
// the unit's abbreviations and undecoded DIEs, unitFuncs), without
// decoding any function. A front end runs it for the executable's main
// while the program starts: a first stop's frame 0 is most often in a
// unit of the executable, and the first stop of a one-unit C program
// built the index before its scopes could answer.
func (r *Reader) PrepareUnitAt(pc uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() { recover() }() // a damaged unit is the lookups' to report
	for _, ui := range r.unitsAtPC(pc) {
		r.unitFuncs(ui)
	}
}
