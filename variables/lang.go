package variables

// Language is the source language of a unit, as far as evaluating and
// printing expressions in it differ (gdb's "set language auto" follows the
// selected frame's unit).
type Language uint8

const (
	LangC     Language = iota // C, and any language not named below
	LangCPlus                 // C++ (every DW_LANG_C_plus_plus version)
	LangRust                  // Rust
)

// Language returns the language of the unit s was declared in: a C++ or
// Rust comparison is a bool there, a C one an int.
func (s *Scope) Language() Language {
	if s == nil || s.r == nil {
		return LangC
	}
	s.r.mu.Lock()
	lang := int64(0)
	if s.unit >= 0 && s.unit < len(s.r.units) {
		lang = s.r.unitDIE(s.unit).lang
	}
	s.r.mu.Unlock()
	switch {
	case lang == langRust:
		return LangRust
	case cxxLangs[lang]:
		return LangCPlus
	}
	return LangC
}
