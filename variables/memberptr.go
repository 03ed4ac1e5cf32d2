package variables

import (
	"encoding/binary"
	"strconv"
)

// memberPointer prints a C++ pointer to member as gdb does: a data
// member's as &Class::member (its offset found among the class's fields;
// -1 is NULL), a member function's as its address and symbol,
// 0x401298 <Counter::bump(int)> (a virtual one, Itanium's vtable offset
// plus one, as &virtual table offset N), with the this adjustment when
// not zero.
func (p *printer) memberPointer(s *Type, b []byte) {
	if elem := s.Elem.Strip(); elem != nil && elem.Kind == KindFunction {
		if len(b) < 16 {
			p.b.WriteString(strconv.FormatUint(le(b), 10))
			return
		}
		ptr := binary.LittleEndian.Uint64(b)
		adj := int64(binary.LittleEndian.Uint64(b[8:]))
		switch {
		case ptr == 0:
			p.b.WriteString("NULL")
		case ptr&1 != 0:
			p.b.WriteString("&virtual table offset " + strconv.FormatUint((ptr-1)/8, 10))
		default:
			p.b.WriteString("0x" + strconv.FormatUint(ptr, 16))
			if sym := p.symbol(ptr); sym != "" {
				p.b.WriteString(" <" + sym + ">")
			}
		}
		if adj != 0 {
			p.b.WriteString(", this adjustment " + strconv.FormatInt(adj, 10))
		}
		return
	}
	off := signExtend(le(b), len(b))
	if off == -1 {
		p.b.WriteString("NULL")
		return
	}
	c := s.Container
	if c != nil && c.Strip() != nil && c.Strip().Declaration && p.r != nil {
		c = p.r.Complete(c)
	}
	if cs := c.Strip(); cs != nil {
		for _, f := range cs.Fields {
			if !f.Base && f.Name != "" && f.Offset == off && f.BitSize == 0 && f.OffsetExpr == nil {
				name := cs.Name
				if p.r != nil {
					name = p.r.ScopedName(cs)
				}
				p.b.WriteString("&" + name + "::" + f.Name)
				return
			}
		}
	}
	p.b.WriteString(strconv.FormatInt(off, 10))
}
