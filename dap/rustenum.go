package dap

import (
	"strings"

	"github.com/sondedbg/sonde/variables"
)

// Rust enums are structs with a variant part: the value shows the variant
// it holds as Rust writes it — None, Some(5), Book {title: "Dune", pages:
// 412} — and expands to that variant's fields (named by expressions such as
// (opt).Some.__0, which package expr resolves).

// maxEnumDepth bounds the nesting of enums shown inside enums.
const maxEnumDepth = 4

// enumSummary prints a Rust enum's value.
func enumSummary(fe *frameEnv, v variables.Value, t *variables.Type) (string, bool) {
	return enumText(fe, v, t, 0)
}

func enumText(fe *frameEnv, v variables.Value, t *variables.Type, depth int) (string, bool) {
	act := t.Variants.Active(v.Bytes)
	if act == nil {
		return "", false
	}
	vt := act.Field.Type.Strip()
	name := act.Field.Name
	if vt == nil || !vt.IsComposite() || len(vt.Fields) == 0 {
		return name, true
	}
	tuple := true
	for _, f := range vt.Fields {
		if !strings.HasPrefix(f.Name, "__") {
			tuple = false
		}
	}
	var parts []string
	for _, f := range vt.Fields {
		fv, ok := subValue(v, act.Field.Offset+f.Offset, f.Type)
		text := "<unavailable>"
		if ok {
			text = fieldText(fe, fv, depth)
		}
		if tuple {
			parts = append(parts, text)
		} else {
			parts = append(parts, f.Name+": "+text)
		}
	}
	if tuple {
		return name + "(" + strings.Join(parts, ", ") + ")", true
	}
	return name + " {" + strings.Join(parts, ", ") + "}", true
}

// subValue is the part of v at off of type ft (no bit fields: Rust has
// none).
func subValue(v variables.Value, off int64, ft *variables.Type) (variables.Value, bool) {
	size := ft.ByteSize()
	if off < 0 || size < 0 || off+size > int64(len(v.Bytes)) {
		return variables.Value{}, false
	}
	sv := variables.Value{Type: ft, Bytes: v.Bytes[off : off+size], Place: v.Place}
	if v.Place == variables.PlaceMemory {
		sv.Address = v.Address + uint64(off)
	}
	return sv, true
}

// fieldText prints a variant's field: strings and enums by their
// summaries, the rest as gdb prints it.
func fieldText(fe *frameEnv, v variables.Value, depth int) string {
	if st := v.Type.Strip(); st != nil && st.Variants != nil && depth < maxEnumDepth {
		if text, ok := enumText(fe, v, st, depth+1); ok {
			return text
		}
	}
	if text, ok := summary(fe, v); ok {
		return text
	}
	if fe.reader == nil {
		return "?"
	}
	return fe.reader.Format(v, nil, fe.frame, variables.FormatOptions{UTF8: true})
}

// variantsHaveFields reports whether any variant has data to expand.
func variantsHaveFields(p *variables.VariantPart) bool {
	for _, v := range p.Variants {
		if vt := v.Field.Type.Strip(); vt != nil && vt.IsComposite() && len(vt.Fields) > 0 {
			return true
		}
	}
	return false
}
