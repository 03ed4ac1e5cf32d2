package symbols

// AltDWARFSection returns a DWARF section (decompressed) of the dwz
// supplementary file the binary's DWARF names in .gnu_debugaltlink, for
// readers that follow DW_FORM_GNU_ref_alt and DW_FORM_GNU_strp_alt
// themselves (package variables). It returns nil, nil when there is no such
// file or it has no such section.
func (b *Binary) AltDWARFSection(name string) ([]byte, error) {
	if b.dw == nil || b.dw.alt == nil {
		return nil, nil
	}
	return b.dw.alt.ef.section(name)
}
