package variables

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"
	"strings"

	dw "github.com/sondedbg/sonde/dwarf"
)

// Kind is what a Type is.
type Kind uint8

const (
	KindVoid Kind = iota
	KindBase
	KindPointer
	KindReference       // C++ lvalue reference (T&)
	KindRValueReference // C++ rvalue reference (T&&)
	KindTypedef
	KindConst
	KindVolatile
	KindRestrict
	KindAtomic
	KindArray
	KindStruct
	KindClass
	KindUnion
	KindEnum
	KindFunction
	KindMemberPointer
	KindUnspecified // DW_TAG_unspecified_type (decltype(nullptr)) or an undecodable type
)

var kindNames = [...]string{"void", "base", "pointer", "reference", "rvalue-reference", "typedef",
	"const", "volatile", "restrict", "atomic", "array", "struct", "class", "union", "enum",
	"function", "member-pointer", "unspecified"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Encoding is a base type's DW_ATE_* encoding.
type Encoding uint8

// The encodings that change how bits are read.
const (
	EncAddress      Encoding = 0x01
	EncBoolean      Encoding = 0x02
	EncComplexFloat Encoding = 0x03
	EncFloat        Encoding = 0x04
	EncSigned       Encoding = 0x05
	EncSignedChar   Encoding = 0x06
	EncUnsigned     Encoding = 0x07
	EncUnsignedChar Encoding = 0x08
	EncUTF          Encoding = 0x10
)

// Signed reports whether integers of this encoding are signed.
func (e Encoding) Signed() bool { return e == EncSigned || e == EncSignedChar }

// Type is a C or C++ type as DWARF describes it. Types are shared and
// immutable once returned; a type that refers to itself (a list node
// pointing to its own struct) is one graph with a cycle, so walk it with a
// visited set or a depth bound.
type Type struct {
	// Offset is the DIE that describes the type; 0 for types made up by a
	// client (pointer-to-T from &x, literal types). Dim distinguishes the
	// inner dimensions of a multi-dimensional array, which share a DIE.
	Offset uint64
	Dim    int
	Kind   Kind
	Name   string // as in DWARF ("" anonymous); see String for the C spelling
	// Size in bytes (-1 unknown). For typedefs and qualifiers use ByteSize.
	Size     int64
	Encoding Encoding // KindBase, and KindEnum's underlying encoding when known
	// Elem is the pointee, the typedef's or qualifier's target, the array
	// element, the enum's underlying type, the function's return type (nil:
	// void) or the member pointer's member type.
	Elem *Type

	// Arrays (one dimension per Type; multi-dimensional arrays nest).
	Lower int64 // lower bound (0 in C)
	Count int64 // number of elements; -1 unknown (flexible or variable length)
	// Bound, for a variable-length array, says how to compute its upper
	// bound (or count) at run time in a frame.
	Bound *DynamicBound

	Fields         []Field         // struct, class, union: members and base classes
	Enumerators    []Enumerator    // enum
	Params         []*Type         // function
	Variadic       bool            // function
	TemplateParams []TemplateParam // C++ templates
	Container      *Type           // member pointer: the class
	Declaration    bool            // an incomplete type (declared, not defined here)
	// Variants, for a struct with a DW_TAG_variant_part (a Rust enum): the
	// discriminant and the variants, of which the value holds one.
	Variants *VariantPart
}

// VariantPart is a discriminated union inside a struct (Rust's enums): the
// discriminant member's value selects the variant whose member holds the
// value's data.
type VariantPart struct {
	Discr    *Field // nil: no discriminant (a single variant)
	Variants []Variant
}

// Variant is one alternative of a VariantPart: its member (in Rust a struct
// named after the variant), chosen when the discriminant equals Value, or
// when no other variant's Value matches if it has none (the default).
type Variant struct {
	Value    int64
	HasValue bool
	Field    Field
}

// Active returns the variant a value's bytes (the whole struct) hold, or
// nil when the discriminant cannot be read.
func (p *VariantPart) Active(b []byte) *Variant {
	if p == nil {
		return nil
	}
	if p.Discr == nil {
		if len(p.Variants) == 1 {
			return &p.Variants[0]
		}
		return nil
	}
	size := p.Discr.Type.ByteSize()
	if size <= 0 || size > 8 || p.Discr.Offset < 0 || p.Discr.Offset+size > int64(len(b)) {
		return nil
	}
	var w [8]byte
	copy(w[:], b[p.Discr.Offset:p.Discr.Offset+size])
	d := binary.LittleEndian.Uint64(w[:])
	mask := ^uint64(0)
	if size < 8 {
		mask = 1<<(8*size) - 1
	}
	var def *Variant
	for i := range p.Variants {
		v := &p.Variants[i]
		switch {
		case !v.HasValue:
			def = v
		case uint64(v.Value)&mask == d&mask:
			return v
		}
	}
	return def
}

// DynamicBound is a run-time array bound: a location expression computing it
// or the DIE of a variable holding it (gcc uses an artificial variable).
type DynamicBound struct {
	Expr    []byte
	Var     uint64
	IsCount bool // DW_AT_count rather than DW_AT_upper_bound
}

// Field is a struct, class or union member, or a base class.
type Field struct {
	Name   string
	Type   *Type
	Offset int64 // byte offset in the containing object
	// OffsetExpr, when set, computes the offset at run time from the object's
	// address (virtual base classes): evaluate with the address pushed.
	OffsetExpr []byte
	// BitSize is non-zero for bit fields; BitOffset then counts bits from the
	// start of the containing object (DW_AT_data_bit_offset; DWARF 4's
	// DW_AT_bit_offset is converted).
	BitSize, BitOffset int64
	Base               bool   // a base class subobject (DW_TAG_inheritance)
	Virtual            bool   // a virtual base
	Artificial         bool   // compiler-made (vtable pointer)
	Offset0            uint64 // the member's DIE
}

// Enumerator is one named value of an enum.
type Enumerator struct {
	Name  string
	Value int64
}

// TemplateParam is a C++ template parameter: a type, or a value of a type.
type TemplateParam struct {
	Name     string
	Type     *Type
	Value    int64
	HasValue bool
}

// Strip returns t without typedefs and cv-qualifiers.
func (t *Type) Strip() *Type {
	for i := 0; t != nil && i < 64; i++ {
		switch t.Kind {
		case KindTypedef, KindConst, KindVolatile, KindRestrict, KindAtomic:
			if t.Elem == nil {
				return t
			}
			t = t.Elem
		default:
			return t
		}
	}
	return t
}

// ByteSize returns the size of t in bytes, following typedefs and
// qualifiers and multiplying out arrays; -1 when unknown.
func (t *Type) ByteSize() int64 {
	s := t.Strip()
	if s == nil {
		return -1
	}
	if s.Size >= 0 {
		return s.Size
	}
	switch s.Kind {
	case KindPointer, KindReference, KindRValueReference:
		return 8
	case KindArray:
		if s.Count < 0 || s.Elem == nil {
			return -1
		}
		es := s.Elem.ByteSize()
		if es < 0 || (es > 0 && s.Count > (1<<40)/es) {
			return -1
		}
		return es * s.Count
	case KindVoid:
		return 1 // GNU C: sizeof(void) == 1, arithmetic on void* steps bytes
	}
	return -1
}

// IsInteger reports whether t (stripped) is an integer, bool, char or enum.
func (t *Type) IsInteger() bool {
	s := t.Strip()
	if s == nil {
		return false
	}
	switch s.Kind {
	case KindEnum:
		return true
	case KindBase:
		return s.Encoding != EncFloat && s.Encoding != EncComplexFloat
	}
	return false
}

// IsFloat reports whether t (stripped) is a real floating type.
func (t *Type) IsFloat() bool {
	s := t.Strip()
	return s != nil && s.Kind == KindBase && s.Encoding == EncFloat
}

// IsSigned reports whether t (stripped) is a signed integer (enums: when
// their underlying type is, or when no underlying type is known and a value
// is negative; here: when the underlying encoding says so).
func (t *Type) IsSigned() bool {
	s := t.Strip()
	if s == nil {
		return false
	}
	if s.Kind == KindEnum {
		if s.Elem != nil {
			return s.Elem.IsSigned()
		}
		return s.Encoding.Signed() || s.Encoding == 0
	}
	return s.Kind == KindBase && s.Encoding.Signed()
}

// IsPointer reports whether t (stripped) is a pointer.
func (t *Type) IsPointer() bool { s := t.Strip(); return s != nil && s.Kind == KindPointer }

// IsComposite reports whether t (stripped) is a struct, class or union.
func (t *Type) IsComposite() bool {
	s := t.Strip()
	return s != nil && (s.Kind == KindStruct || s.Kind == KindClass || s.Kind == KindUnion)
}

// String spells t as C does ("struct point *", "int [3][4]",
// "int (*)(int, char)").
func (t *Type) String() string { return t.spell(nil) }

// spell is String with name, when not nil, naming the named types it
// accepts (ok) instead of C's "struct point".
func (t *Type) spell(name func(*Type) (string, bool)) string {
	pre, post := t.decl(0, name)
	s := strings.TrimSpace(pre)
	switch {
	case strings.HasPrefix(post, ")"):
		s += post
	case post != "":
		s += " " + post
	}
	return s
}

// decl returns the text before and after the declarator position.
func (t *Type) decl(depth int, name func(*Type) (string, bool)) (string, string) {
	if t == nil {
		return "void", ""
	}
	if depth > 32 {
		return "...", ""
	}
	if name != nil && t.Name != "" && (t.Kind == KindTypedef || t.IsComposite() || t.Kind == KindEnum) {
		if n, ok := name(t); ok {
			return n, ""
		}
	}
	switch t.Kind {
	case KindVoid:
		return "void", ""
	case KindBase, KindTypedef, KindUnspecified:
		if t.Name == "" && t.Kind == KindTypedef && t.Elem != nil {
			return t.Elem.decl(depth+1, name)
		}
		if t.Name == "" {
			return "?", ""
		}
		return t.Name, ""
	case KindStruct, KindClass, KindUnion, KindEnum:
		tag := map[Kind]string{KindStruct: "struct", KindClass: "class", KindUnion: "union", KindEnum: "enum"}[t.Kind]
		if t.Name == "" {
			return tag + " {...}", ""
		}
		return tag + " " + t.Name, ""
	case KindConst, KindVolatile, KindRestrict, KindAtomic:
		q := map[Kind]string{KindConst: "const", KindVolatile: "volatile", KindRestrict: "restrict", KindAtomic: "_Atomic"}[t.Kind]
		if t.Elem != nil {
			if s := t.Elem.Strip(); s != nil && (s.Kind == KindPointer || s.Kind == KindReference) && t.Elem.Kind != KindTypedef {
				pre, post := t.Elem.decl(depth+1, name)
				return pre + " " + q, post
			}
		}
		pre, post := t.Elem.decl(depth+1, name)
		return q + " " + pre, post
	case KindPointer, KindReference, KindRValueReference, KindMemberPointer:
		sym := map[Kind]string{KindPointer: "*", KindReference: "&", KindRValueReference: "&&", KindMemberPointer: "::*"}[t.Kind]
		if t.Kind == KindMemberPointer && t.Container != nil {
			cn := t.Container.Name
			if name != nil {
				if n, ok := name(t.Container); ok {
					cn = n
				}
			}
			sym = cn + "::*"
		}
		elem := t.Elem
		if t.Kind == KindMemberPointer {
			elem = methodThisConst(elem)
		}
		pre, post := elem.decl(depth+1, name)
		if t.Elem != nil && (t.Elem.Kind == KindArray || t.Elem.Kind == KindFunction) {
			return pre + " (" + sym, ")" + post
		}
		if strings.HasSuffix(pre, "(*") || strings.HasSuffix(pre, "(&") {
			return pre + sym, post
		}
		if strings.HasSuffix(pre, "*") {
			return pre + sym, post
		}
		return pre + " " + sym, post
	case KindArray:
		n := ""
		if t.Count >= 0 {
			n = fmt.Sprint(t.Count)
		}
		pre, post := t.Elem.decl(depth+1, name)
		return pre, "[" + n + "]" + post
	case KindFunction:
		var ps []string
		for _, p := range t.Params {
			ps = append(ps, p.spell(name))
		}
		if t.Variadic {
			ps = append(ps, "...")
		}
		if len(ps) == 0 {
			ps = []string{"void"}
		}
		pre, post := t.Elem.decl(depth+1, name)
		return pre, "(" + strings.Join(ps, ", ") + ")" + post
	}
	return "?", ""
}

// methodThisConst is a method type with its this parameter spelled as gdb
// spells it in a pointer to member function, Counter * const (DWARF's
// subroutine type says Counter *).
func methodThisConst(f *Type) *Type {
	if f == nil || f.Kind != KindFunction || len(f.Params) == 0 || f.Params[0] == nil || f.Params[0].Kind != KindPointer {
		return f
	}
	c := *f
	c.Params = append([]*Type{{Kind: KindConst, Elem: f.Params[0], Size: f.Params[0].Size, Count: -1}}, f.Params[1:]...)
	return &c
}

// maxTypeDepth bounds how deep decoding follows non-cyclic type chains.
const maxTypeDepth = 200

// Type returns the type described by the DIE at off.
func (r *Reader) Type(die uint64) (t *Type, err error) {
	if c, real, ok := r.child(die); ok {
		return c.Type(real)
	}
	off := r.real(die)
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, errPanic("decode type", p)
		}
	}()
	return r.typeAt(off, 0)
}

// typeOf decodes the DW_AT_type of e (nil and no error for void).
func (r *Reader) typeOf(e *entry, depth int) (*Type, error) {
	off, ok := r.refOf(e, dwarf.AttrType)
	if !ok {
		if e.AttrField(dwarf.AttrType) != nil {
			return nil, bad("decode type", uint64(e.Offset), "unresolvable type reference")
		}
		return nil, nil
	}
	return r.typeAt(off, depth+1)
}

var voidType = &Type{Kind: KindVoid, Name: "void", Size: 1}

// typeAt decodes (or finds in the cache) the type at off. Callers hold r.mu.
// The type is cached before its parts are decoded, so a type that refers to
// itself resolves to the same *Type instead of recursing.
func (r *Reader) typeAt(off dwarf.Offset, depth int) (*Type, error) {
	if t, ok := r.types[off]; ok {
		return t, nil
	}
	if depth > maxTypeDepth {
		return nil, bad("decode type", uint64(off), "type chain deeper than %d", maxTypeDepth)
	}
	e, rd, err := r.entryAt(off)
	if err != nil {
		return nil, err
	}
	// A declaration completed in a type unit (DW_AT_signature).
	if sig, ok := r.refOf(e, dwarf.AttrSignature); ok && sig != off {
		t, err := r.typeAt(sig, depth+1)
		if err == nil {
			r.types[off] = t
		}
		return t, err
	}
	t := &Type{Offset: r.pub(off), Size: -1, Count: -1}
	t.Name, _ = e.Val(dwarf.AttrName).(string)
	if v, ok := e.Val(dwarf.AttrByteSize).(int64); ok {
		t.Size = v
	}
	t.Declaration, _ = e.Val(dwarf.AttrDeclaration).(bool)
	r.types[off] = t
	if err := r.fillType(t, e, rd, depth); err != nil {
		t.Kind, t.Elem, t.Fields = KindUnspecified, nil, nil
		if t.Name == "" {
			t.Name = "<unreadable type>"
		}
		return t, err
	}
	return t, nil
}

func (r *Reader) fillType(t *Type, e *entry, rd *dieReader, depth int) error {
	var err error
	switch e.Tag {
	case dwarf.TagBaseType:
		t.Kind = KindBase
		if v, ok := e.Val(dwarf.AttrEncoding).(int64); ok {
			t.Encoding = Encoding(v)
		}
		return nil
	case dwarf.TagUnspecifiedType:
		t.Kind = KindUnspecified
		if t.Name == "decltype(nullptr)" && t.Size < 0 {
			t.Size = 8
		}
		return nil
	case dwarf.TagPointerType, dwarf.TagReferenceType, dwarf.TagRvalueReferenceType:
		t.Kind = map[dwarf.Tag]Kind{dwarf.TagPointerType: KindPointer, dwarf.TagReferenceType: KindReference,
			dwarf.TagRvalueReferenceType: KindRValueReference}[e.Tag]
		if t.Size < 0 {
			t.Size = 8
		}
		t.Elem, err = r.typeOf(e, depth)
		if t.Elem == nil && err == nil {
			t.Elem = voidType
		}
		return err
	case dwarf.TagTypedef, dwarf.TagConstType, dwarf.TagVolatileType, dwarf.TagRestrictType, dwarf.TagAtomicType:
		t.Kind = map[dwarf.Tag]Kind{dwarf.TagTypedef: KindTypedef, dwarf.TagConstType: KindConst,
			dwarf.TagVolatileType: KindVolatile, dwarf.TagRestrictType: KindRestrict, dwarf.TagAtomicType: KindAtomic}[e.Tag]
		t.Elem, err = r.typeOf(e, depth)
		if t.Elem == nil && err == nil {
			t.Elem = voidType
		}
		return err
	case dwarf.TagPtrToMemberType:
		t.Kind = KindMemberPointer
		if t.Elem, err = r.typeOf(e, depth); err != nil {
			return err
		}
		if c, ok := r.refOf(e, dwarf.AttrContainingType); ok {
			t.Container, err = r.typeAt(c, depth+1)
		}
		if t.Size < 0 {
			t.Size = 8
			if t.Elem != nil && t.Elem.Strip().Kind == KindFunction {
				t.Size = 16
			}
		}
		return err
	case dwarf.TagEnumerationType:
		t.Kind = KindEnum
		if t.Elem, err = r.typeOf(e, depth); err != nil {
			return err
		}
		if t.Elem != nil {
			t.Encoding = t.Elem.Strip().Encoding
		}
		return r.eachChild(e, rd, func(c *entry) error {
			if c.Tag == dwarf.TagEnumerator {
				name, _ := c.Val(dwarf.AttrName).(string)
				v, _ := constInt(c.AttrField(dwarf.AttrConstValue))
				t.Enumerators = append(t.Enumerators, Enumerator{Name: name, Value: v})
			}
			return nil
		})
	case dwarf.TagSubroutineType:
		t.Kind = KindFunction
		if t.Elem, err = r.typeOf(e, depth); err != nil {
			return err
		}
		return r.eachChild(e, rd, func(c *entry) error {
			switch c.Tag {
			case dwarf.TagFormalParameter:
				p, err := r.typeOf(c, depth)
				if err != nil {
					return err
				}
				t.Params = append(t.Params, p)
			case dwarf.TagUnspecifiedParameters:
				t.Variadic = true
			}
			return nil
		})
	case dwarf.TagArrayType:
		return r.fillArray(t, e, rd, depth)
	case dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType:
		t.Kind = map[dwarf.Tag]Kind{dwarf.TagStructType: KindStruct, dwarf.TagClassType: KindClass, dwarf.TagUnionType: KindUnion}[e.Tag]
		return r.fillComposite(t, e, rd, depth)
	}
	return bad("decode type", uint64(e.Offset), "DIE with tag %v is not a type", e.Tag)
}

// children calls fn for each direct child of e (whose reader rd is just past
// e).
func (r *Reader) eachChild(e *entry, rd *dieReader, fn func(*entry) error) error {
	if !e.Children {
		return nil
	}
	// Child DIEs are read with a second reader: fn may decode other types,
	// which moves readers.
	for n := 0; ; n++ {
		c, err := rd.Next()
		if err != nil {
			return &Error{Op: "read children", Offset: uint64(e.Offset), Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
		}
		if c == nil || c.Tag == 0 {
			return nil
		}
		if n > 1<<20 {
			return bad("read children", uint64(e.Offset), "too many children")
		}
		if c.Children {
			rd.SkipChildren()
		}
		if err := fn(c); err != nil {
			return err
		}
	}
}

// maxArrayCount bounds array dimensions read from DWARF (the element count
// of one dimension); larger counts are treated as unknown.
const maxArrayCount = 1 << 40

func (r *Reader) fillArray(t *Type, e *entry, rd *dieReader, depth int) error {
	elem, err := r.typeOf(e, depth)
	if err != nil {
		return err
	}
	if elem == nil {
		elem = voidType
	}
	type dim struct {
		lower, count int64
		bound        *DynamicBound
	}
	var dims []dim
	err = r.eachChild(e, rd, func(c *entry) error {
		if c.Tag != dwarf.TagSubrangeType && c.Tag != dwarf.TagEnumerationType {
			return nil
		}
		d := dim{count: -1}
		if v, ok := constInt(c.AttrField(dwarf.AttrLowerBound)); ok {
			d.lower = v
		}
		if f := c.AttrField(dwarf.AttrCount); f != nil {
			if v, ok := constInt(f); ok {
				d.count = v
			} else {
				d.bound = r.dynBound(f, true)
			}
		} else if f := c.AttrField(dwarf.AttrUpperBound); f != nil {
			if v, ok := constInt(f); ok {
				// gcc writes upper bound -1 (or 0xffff...) for T[0] / flexible members.
				if v >= d.lower-1 {
					d.count = v - d.lower + 1
				}
			} else {
				d.bound = r.dynBound(f, false)
			}
		}
		if d.count > maxArrayCount {
			d.count = -1
		}
		dims = append(dims, d)
		return nil
	})
	if err != nil {
		return err
	}
	if len(dims) == 0 {
		dims = []dim{{count: -1}}
	}
	if len(dims) > 64 {
		return bad("decode array", uint64(e.Offset), "%d dimensions", len(dims))
	}
	// The outermost dimension is t itself; inner ones are made up types that
	// share the DIE.
	inner := elem
	for i := len(dims) - 1; i >= 1; i-- {
		inner = &Type{Offset: t.Offset, Dim: i, Kind: KindArray, Size: -1, Elem: inner,
			Lower: dims[i].lower, Count: dims[i].count, Bound: dims[i].bound}
	}
	t.Kind, t.Elem = KindArray, inner
	t.Lower, t.Count, t.Bound = dims[0].lower, dims[0].count, dims[0].bound
	if t.Count >= 0 {
		t.Size = -1 // computed by ByteSize from the element size
	}
	return nil
}

func (r *Reader) dynBound(f *field, isCount bool) *DynamicBound {
	switch v := f.Val.(type) {
	case []byte:
		return &DynamicBound{Expr: v, IsCount: isCount}
	case dwarf.Offset:
		return &DynamicBound{Var: r.pub(v), IsCount: isCount}
	}
	return nil
}

func (r *Reader) fillComposite(t *Type, e *entry, rd *dieReader, depth int) error {
	return r.eachChild(e, rd, func(c *entry) error {
		switch c.Tag {
		case dwarf.TagMember, dwarf.TagInheritance:
			// Static data members (DWARF 4 puts them here as declarations).
			if decl, _ := c.Val(dwarf.AttrDeclaration).(bool); decl && c.Tag == dwarf.TagMember {
				return nil
			}
			f, err := r.memberField(c, depth)
			if err != nil {
				return err
			}
			t.Fields = append(t.Fields, f)
		case dwarf.TagVariantPart:
			vp, err := r.variantPart(c, depth)
			if err != nil {
				return err
			}
			t.Variants = vp
		case dwarf.TagTemplateTypeParameter, dwarf.TagTemplateValueParameter:
			t.TemplateParams = append(t.TemplateParams, r.templateParam(c, depth))
		}
		return nil
	})
}

// variantPart decodes a DW_TAG_variant_part: its discriminant member (named
// by DW_AT_discr) and its DW_TAG_variant children, each holding one member.
func (r *Reader) variantPart(e *entry, depth int) (*VariantPart, error) {
	vp := &VariantPart{}
	pe, prd, err := r.entryAt(e.Offset)
	if err != nil {
		return nil, err
	}
	discr, hasDiscr := r.refOf(pe, dwarf.AttrDiscr)
	err = r.eachChild(pe, prd, func(c *entry) error {
		switch c.Tag {
		case dwarf.TagMember:
			f, err := r.memberField(c, depth)
			if err != nil {
				return err
			}
			if hasDiscr && c.Offset == discr {
				vp.Discr = &f
			}
		case dwarf.TagVariant:
			if len(vp.Variants) >= 1<<16 {
				return bad("decode variant part", uint64(e.Offset), "too many variants")
			}
			v := Variant{}
			v.Value, v.HasValue = constInt(c.AttrField(dwarf.AttrDiscrValue))
			ve, vrd, err := r.entryAt(c.Offset)
			if err != nil {
				return err
			}
			found := false
			err = r.eachChild(ve, vrd, func(m *entry) error {
				if m.Tag != dwarf.TagMember || found {
					return nil
				}
				f, err := r.memberField(m, depth)
				if err != nil {
					return err
				}
				v.Field, found = f, true
				return nil
			})
			if err != nil {
				return err
			}
			if found {
				vp.Variants = append(vp.Variants, v)
			}
		}
		return nil
	})
	return vp, err
}

// memberField decodes a DW_TAG_member or DW_TAG_inheritance.
func (r *Reader) memberField(c *entry, depth int) (Field, error) {
	ft, err := r.typeOf(c, depth)
	if err != nil {
		return Field{}, err
	}
	if ft == nil {
		ft = voidType
	}
	f := Field{Type: ft, Base: c.Tag == dwarf.TagInheritance, Offset0: r.pub(c.Offset)}
	f.Name, _ = c.Val(dwarf.AttrName).(string)
	f.Artificial, _ = c.Val(dwarf.AttrArtificial).(bool)
	if v, ok := c.Val(dwarf.AttrVirtuality).(int64); ok && v != 0 {
		f.Virtual = true
	}
	if lf := c.AttrField(dwarf.AttrDataMemberLoc); lf != nil {
		if v, ok := constInt(lf); ok {
			f.Offset = v
		} else if b, ok := lf.Val.([]byte); ok {
			if v, ok := plusUconst(b); ok {
				f.Offset = int64(v)
			} else {
				f.OffsetExpr = b
			}
		}
	}
	if bs, ok := constInt(c.AttrField(dwarf.AttrBitSize)); ok && bs > 0 {
		f.BitSize = bs
		if dbo, ok := constInt(c.AttrField(dwarf.AttrDataBitOffset)); ok {
			f.BitOffset = dbo
		} else {
			// DWARF 2-4: DW_AT_bit_offset counts from the most
			// significant bit of the storage unit at
			// data_member_location; on a little-endian target the
			// data bit offset is storage bits - bit_offset - size.
			bo, _ := constInt(c.AttrField(dwarf.AttrBitOffset))
			storage, ok := constInt(c.AttrField(dwarf.AttrByteSize))
			if !ok {
				storage = ft.ByteSize()
			}
			f.BitOffset = f.Offset*8 + storage*8 - bo - bs
		}
		f.Offset = f.BitOffset / 8
	}
	return f, nil
}

func (r *Reader) templateParam(c *entry, depth int) TemplateParam {
	p := TemplateParam{}
	p.Name, _ = c.Val(dwarf.AttrName).(string)
	p.Type, _ = r.typeOf(c, depth)
	if c.Tag == dwarf.TagTemplateValueParameter {
		p.Value, p.HasValue = constInt(c.AttrField(dwarf.AttrConstValue))
	}
	return p
}

// constInt reads an integer constant attribute (any data or sdata/udata form).
func constInt(f *field) (int64, bool) {
	if f == nil {
		return 0, false
	}
	switch v := f.Val.(type) {
	case int64:
		return v, f.Class == dwarf.ClassConstant || f.Class == 0
	case uint64:
		return int64(v), f.Class == dwarf.ClassConstant
	}
	return 0, false
}

// plusUconst recognizes the expression DW_OP_plus_uconst n (member offsets in
// DWARF 2 style) and returns n.
func plusUconst(b []byte) (uint64, bool) {
	if len(b) < 2 || b[0] != 0x23 {
		return 0, false
	}
	c := dw.NewCursor("DW_AT_data_member_location", b, 1)
	v := c.Uleb()
	return v, c.Err() == nil && c.Remaining() == 0
}
