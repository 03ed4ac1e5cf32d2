package variables

import (
	"strconv"
	"strings"
)

// Rust's syntax: a value whose type comes from a Rust unit prints as gdb
// prints it when the current language is Rust (gdb's rust-lang.c):
// structs as pp_rust::Point {x: 1, y: 2}, tuples (1, 2), tuple structs
// pp_rust::Pair (3, 4.5), unit structs by their name, enums by their
// variant (core::option::Option<u32>::Some(5), t::Shape::Circle{r: 1.5}),
// arrays [1, 2, 3], slices &[i32] [1, 2, 3], &str as its text, chars
// 120 'x', the unit type (), pointers (and references) as their address.

// rustAggregate prints a Rust struct, tuple, union or enum.
func (p *printer) rustAggregate(s *Type, b []byte, unavail []bool, base int64, addr uint64, inMem bool, depth int) {
	if s.Variants != nil {
		p.rustEnum(s, b, unavail, base, addr, inMem, depth)
		return
	}
	if p.rustSlice(s, b, depth) {
		return
	}
	tuple := strings.HasPrefix(s.Name, "(")
	tupleStruct := !tuple && underscoreFields(s)
	if !tuple {
		name := p.r.ScopedName(s)
		p.b.WriteString(name)
		if len(s.Fields) == 0 {
			return
		}
		if name != "" {
			p.b.WriteByte(' ')
		}
	}
	open, end := "{", "}"
	if tuple || tupleStruct {
		open, end = "(", ")"
	}
	p.b.WriteString(open)
	p.rustFields(s.Fields, 0, !tuple && !tupleStruct, b, unavail, base, addr, inMem, depth)
	p.b.WriteString(end)
}

// rustFields prints fields (at off in b), named or not, separated by ", ".
func (p *printer) rustFields(fields []Field, off int64, named bool, b []byte, unavail []bool, base int64, addr uint64, inMem bool, depth int) {
	for i, fl := range fields {
		if i > 0 {
			p.b.WriteString(", ")
		}
		if named {
			p.b.WriteString(fl.Name + ": ")
		}
		o := off + fl.Offset
		size := fl.Type.ByteSize()
		if fl.Type == nil || fl.OffsetExpr != nil || fl.BitSize != 0 || o < 0 || size < 0 || o+size > int64(len(b)) {
			p.b.WriteString("<optimized out>")
			continue
		}
		var u []bool
		if unavail != nil && o+size <= int64(len(unavail)) {
			u = unavail[o : o+size]
		}
		p.value(fl.Type, b[o:o+size], u, base+o, addr+uint64(o), inMem, depth+1)
		if p.full() {
			return
		}
	}
}

// underscoreFields reports whether s's fields are __0, __1, ... (a tuple
// struct or tuple variant; gdb's rust_underscore_fields).
func underscoreFields(s *Type) bool {
	if len(s.Fields) == 0 {
		return false
	}
	for i, f := range s.Fields {
		if f.Name != "__"+strconv.Itoa(i) {
			return false
		}
	}
	return true
}

// rustEnum prints the variant an enum holds: its name, then its fields
// in parentheses (a tuple variant) or braces (a struct variant), no space
// between, as gdb's print_enum does.
func (p *printer) rustEnum(s *Type, b []byte, unavail []bool, base int64, addr uint64, inMem bool, depth int) {
	act := s.Variants.Active(b)
	if act == nil || act.Field.Type.Strip() == nil {
		p.b.WriteString(p.r.ScopedName(s) + " {<No data fields>}")
		return
	}
	vt := act.Field.Type.Strip()
	p.b.WriteString(p.r.ScopedName(vt))
	if len(vt.Fields) == 0 {
		return
	}
	tuple := underscoreFields(vt)
	if tuple {
		p.b.WriteByte('(')
	} else {
		p.b.WriteByte('{')
	}
	p.rustFields(vt.Fields, act.Field.Offset, !tuple, b, unavail, base, addr, inMem, depth)
	if tuple {
		p.b.WriteByte(')')
	} else {
		p.b.WriteByte('}')
	}
}

// rustSlice prints &str as its text and &[T] as its type and elements
// (gdb's rust_val_print_slice); false for other types.
func (p *printer) rustSlice(s *Type, b []byte, depth int) bool {
	isStr := s.Name == "&str" || s.Name == "&mut str"
	if !isStr && !strings.HasPrefix(s.Name, "&[") && !strings.HasPrefix(s.Name, "&mut [") {
		return false
	}
	po, pt, ok1 := member(s, "data_ptr")
	lo, _, ok2 := member(s, "length")
	pts := pt.Strip()
	if !ok1 || !ok2 || pts == nil || pts.Kind != KindPointer || po+8 > int64(len(b)) || lo+8 > int64(len(b)) || po < 0 || lo < 0 {
		return false
	}
	ptr, n := le(b[po:po+8]), le(b[lo:lo+8])
	if isStr {
		if p.f == nil {
			return false
		}
		read := min(n, uint64(p.o.Elements))
		buf := make([]byte, read)
		if got, _ := p.f.ReadMemory(buf, ptr); uint64(got) < read {
			p.b.WriteString("<error: Cannot access memory at address 0x" + strconv.FormatUint(ptr+uint64(got), 16) + ">")
			return true
		}
		p.printStr(buf, n > read)
		return true
	}
	p.b.WriteString(s.Name + " ")
	esize := pts.Elem.ByteSize()
	if n == 0 {
		p.b.WriteString("[]")
		return true
	}
	if p.f == nil || esize <= 0 {
		p.b.WriteString("[...]")
		return true
	}
	// The elements gdb would print (print elements, counting repeats as
	// one each), read at most.
	count := min(n, uint64(p.o.Elements)*uint64(p.o.Repeats+1), uint64(MaxValueSize/esize))
	buf := make([]byte, count*uint64(esize))
	if got, _ := p.f.ReadMemory(buf, ptr); got < len(buf) {
		p.b.WriteString("<error: Cannot access memory at address 0x" + strconv.FormatUint(ptr+uint64(got), 16) + ">")
		return true
	}
	arr := &Type{Kind: KindArray, Elem: pts.Elem, Count: int64(count), Size: int64(len(buf))}
	p.rustArray(arr, buf, nil, 0, ptr, true, depth, count < n)
	return true
}

// rustArray prints an array as [a, b, c], repeats folded as C's are;
// more: elements past the ones in b exist.
func (p *printer) rustArray(s *Type, b []byte, unavail []bool, base int64, addr uint64, inMem bool, depth int, more bool) {
	esize := s.Elem.ByteSize()
	count := s.Count
	if count < 0 || esize <= 0 {
		p.b.WriteString("0x" + strconv.FormatUint(addr, 16))
		return
	}
	count = min(count, int64(len(b))/esize)
	if count == 0 && !more {
		p.b.WriteString("[]")
		return
	}
	p.b.WriteByte('[')
	printed := 0
	i := int64(0)
	for i < count {
		if printed >= p.o.Elements {
			break
		}
		elem := b[i*esize : (i+1)*esize]
		var u []bool
		if unavail != nil {
			u = unavail[i*esize : (i+1)*esize]
		}
		j := i + 1
		for j < count && string(b[j*esize:(j+1)*esize]) == string(elem) && unavail == nil {
			j++
		}
		if i > 0 {
			p.b.WriteString(", ")
		}
		p.value(s.Elem, elem, u, base+i*esize, addr+uint64(i*esize), inMem, depth+1)
		if reps := j - i; reps > int64(p.o.Repeats) {
			p.b.WriteString(" <repeats " + strconv.FormatInt(reps, 10) + " times>")
			i = j
			printed += p.o.Repeats
		} else {
			i++
			printed++
		}
		if p.full() {
			break
		}
	}
	if i < count || more {
		p.b.WriteString("...")
	}
	p.b.WriteByte(']')
}
