package services

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/dwarfexpr"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/variables"
)

// The data side of the Symbols service: types, variables, members and
// enumerators, with IDs ('@'-separated, opaque to clients):
//
//	T@<process>@<module start>@<DIE>[.<dim>]   a type described by DWARF
//	TS@<process>@<n>                           a type made up by the agent (&x, getArrayType)
//	M@<process>@<module start>@<DIE>[.<dim>]@<k> member k of a struct, class or union type
//	E@<process>@<module start>@<DIE>@<k>       enumerator k of an enum type
//	L@<frame ID>@<DIE>                         a local or parameter in a stack frame
//	G@<process>@<module start>@<DIE>           a global or static variable
//
// Module starts and DIE offsets are hexadecimal. Types and globals stay
// valid while the module is mapped (UpdatePolicy 0); locals while the thread
// stays stopped (UpdatePolicy 1).

// maxMadeTypes bounds the registry of made-up types; it starts over past it.
const maxMadeTypes = 1 << 14

// TCF type classes.
const (
	typeClassUnknown    = 0
	typeClassCardinal   = 1
	typeClassInteger    = 2
	typeClassReal       = 3
	typeClassPointer    = 4
	typeClassArray      = 5
	typeClassComposite  = 6
	typeClassEnum       = 7
	typeClassMemberPtr  = 9
	typeClassComplex    = 10
	symClassType        = 4
	symFlagParameter    = 0x1
	symFlagTypedef      = 0x2
	symFlagConst        = 0x4
	symFlagVolatile     = 0x20
	symFlagRestrict     = 0x40
	symFlagUnion        = 0x80
	symFlagClass        = 0x100
	symFlagReference    = 0x800
	symFlagLittleEndian = 0x2000
	symFlagExternal     = 0x8000
	symFlagVararg       = 0x10000
	symFlagArtificial   = 0x20000
	symFlagTypeParam    = 0x40000
	symFlagEnum         = 0x400000
	symFlagStruct       = 0x800000
	symFlagInheritance  = 0x2000000
	symFlagBool         = 0x4000000
	symFlagRValue       = 0x10000000
)

// typeClass maps a type to TCF's TypeClass.
func typeClass(t *variables.Type) int {
	s := t.Strip()
	if s == nil {
		return typeClassUnknown
	}
	switch s.Kind {
	case variables.KindBase:
		switch s.Encoding {
		case variables.EncFloat:
			return typeClassReal
		case variables.EncComplexFloat:
			return typeClassComplex
		case variables.EncSigned, variables.EncSignedChar:
			return typeClassInteger
		}
		return typeClassCardinal
	case variables.KindPointer, variables.KindReference, variables.KindRValueReference:
		return typeClassPointer
	case variables.KindArray:
		return typeClassArray
	case variables.KindStruct, variables.KindClass, variables.KindUnion:
		return typeClassComposite
	case variables.KindEnum:
		return typeClassEnum
	case variables.KindFunction:
		return typeClassFunction
	case variables.KindMemberPointer:
		return typeClassMemberPtr
	}
	return typeClassUnknown
}

// typeID names a type for clients: DWARF types by module and DIE, made-up
// ones through the registry.
func (a *Agent) typeID(ee *exprEnv, t *variables.Type) string {
	proc := ee.thread.Process().ID()
	var mod uint64
	if m := ee.frame.Module(); m != nil {
		mod = m.Start
	}
	return a.typeIDIn(string(proc), mod, t)
}

func (a *Agent) typeIDIn(proc string, mod uint64, t *variables.Type) string {
	if t != nil && t.Offset != 0 && mod != 0 {
		id := fmt.Sprintf("T@%s@%x@%x", proc, mod, uint64(t.Offset))
		if t.Dim > 0 {
			id += "." + strconv.Itoa(t.Dim)
		}
		return id
	}
	d := a.data()
	d.madeMu.Lock()
	defer d.madeMu.Unlock()
	n, ok := d.made[t]
	if !ok {
		if len(d.made) >= maxMadeTypes {
			d.made, d.madeBy = map[*variables.Type]int{}, map[int]madeType{}
		}
		d.nextTS++
		n = d.nextTS
		d.made[t] = n
		d.madeBy[n] = madeType{t: t, mod: mod}
	}
	return fmt.Sprintf("TS@%s@%d", proc, n)
}

// variableSymbolID names a variable seen from a frame.
func (a *Agent) variableSymbolID(ee *exprEnv, v *variables.Variable) string {
	if v.Scope == nil && ee.frame.Module() != nil {
		return fmt.Sprintf("G@%s@%x@%x", ee.thread.Process().ID(), ee.frame.Module().Start, uint64(v.Offset))
	}
	return fmt.Sprintf("L@%s@%x", ee.frameID, uint64(v.Offset))
}

// symbolRef is a parsed data symbol ID.
type symbolRef struct {
	kind   string
	proc   *target.Context
	reader *variables.Reader
	mod    uint64
	t      *variables.Type // T, TS, M, E: the type (of the member's container for M and E)
	index  int             // M, E
	ee     *exprEnv        // L
	v      *variables.Variable
}

func badSymbol(id string) error { return tcf.Errorf(tcf.CodeInvalidContext, "no symbol %q", id) }

// parseDataSymbol decodes IDs of the kinds above; ok is false for other
// kinds (functions, the V@ variables of symbols.go).
func (a *Agent) parseDataSymbol(id string) (ref *symbolRef, ok bool, err error) {
	parts := strings.Split(id, "@")
	ref = &symbolRef{kind: parts[0]}
	switch parts[0] {
	case "T", "M", "E", "G":
		if len(parts) < 4 || parts[0] != "T" && parts[0] != "G" && len(parts) != 5 {
			return nil, true, badSymbol(id)
		}
	case "TS":
		if len(parts) != 3 {
			return nil, true, badSymbol(id)
		}
	case "L":
		if len(parts) != 3 {
			return nil, true, badSymbol(id)
		}
		ee, err := a.scopeEnv(parts[1])
		if err != nil {
			return nil, true, err
		}
		off, err := strconv.ParseUint(parts[2], 16, 64)
		if err != nil {
			return nil, true, badSymbol(id)
		}
		ref.ee, ref.proc = ee, ee.thread.Process()
		for _, s := range ee.env.Scopes {
			for _, v := range s.Vars {
				if uint64(v.Offset) == off {
					ref.v = v
				}
			}
		}
		if ref.v == nil {
			return nil, true, badSymbol(id)
		}
		ref.reader = ee.env.Reader
		if m := ee.frame.Module(); m != nil {
			ref.mod = m.Start
		}
		return ref, true, nil
	default:
		return nil, false, nil
	}
	proc, err := a.lookup(parts[1])
	if err != nil {
		return nil, true, err
	}
	ref.proc = proc.Process()
	if parts[0] == "TS" {
		n, err := strconv.Atoi(parts[2])
		if err != nil {
			return nil, true, badSymbol(id)
		}
		d := a.data()
		d.madeMu.Lock()
		mt, ok := d.madeBy[n]
		d.madeMu.Unlock()
		if !ok {
			return nil, true, badSymbol(id)
		}
		ref.t, ref.mod = mt.t, mt.mod
		ref.reader, _ = a.readerAt(ref.proc, mt.mod)
		return ref, true, nil
	}
	mod, err := strconv.ParseUint(parts[2], 16, 64)
	if err != nil {
		return nil, true, badSymbol(id)
	}
	ref.mod = mod
	ref.reader, err = a.readerAt(ref.proc, mod)
	if err != nil {
		return nil, true, err
	}
	offText, dimText, _ := strings.Cut(parts[3], ".")
	off, err := strconv.ParseUint(offText, 16, 64)
	if err != nil {
		return nil, true, badSymbol(id)
	}
	if parts[0] == "G" {
		ref.v, err = ref.reader.VariableAt(off)
		if err != nil {
			return nil, true, tcf.Errorf(tcf.CodeSymbolNotFound, "%v", err)
		}
		return ref, true, nil
	}
	t, err := ref.reader.Type(off)
	if err != nil {
		return nil, true, tcf.Errorf(tcf.CodeInvalidDWARF, "%v", err)
	}
	if dimText != "" {
		dim, err := strconv.Atoi(dimText)
		if err != nil || dim < 0 || dim > 64 {
			return nil, true, badSymbol(id)
		}
		for i := 0; i < dim && t != nil; i++ {
			t = t.Elem
		}
		if t == nil || t.Kind != variables.KindArray {
			return nil, true, badSymbol(id)
		}
	}
	ref.t = t
	if parts[0] == "M" || parts[0] == "E" {
		k, err := strconv.Atoi(parts[4])
		s := t.Strip()
		if err != nil || k < 0 || parts[0] == "M" && k >= len(s.Fields) || parts[0] == "E" && k >= len(s.Enumerators) {
			return nil, true, badSymbol(id)
		}
		ref.index = k
	}
	return ref, true, nil
}

// readerAt finds the DWARF of the module of proc that starts at mod.
func (a *Agent) readerAt(proc *target.Context, mod uint64) (*variables.Reader, error) {
	mods, err := a.session.Modules(proc)
	if err != nil {
		return nil, err
	}
	var m *session.Module
	for _, x := range mods {
		if x.Start == mod {
			m = x
		}
	}
	if m == nil {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "no module at %#x (unloaded?)", mod)
	}
	b, err := a.session.Binary(m)
	if b == nil {
		return nil, tcf.Errorf(tcf.CodeSymbolNotFound, "no symbols for %s: %v", m.Name, err)
	}
	return variables.For(b)
}

// dataSymbolContext answers Symbols.getContext for data symbol IDs.
func (a *Agent) dataSymbolContext(id string) (map[string]any, bool, error) {
	ref, ok, err := a.parseDataSymbol(id)
	if !ok || err != nil {
		return nil, ok, err
	}
	proc := string(ref.proc.ID())
	p := map[string]any{"ID": id, "OwnerID": proc, "UpdatePolicy": 0}
	switch ref.kind {
	case "T", "TS":
		a.typeProps(p, proc, ref.mod, ref.t)
	case "M":
		s := ref.t.Strip()
		f := s.Fields[ref.index]
		p["Class"] = symClassReference
		p["Name"] = f.Name
		p["TypeID"] = a.typeIDIn(proc, ref.mod, f.Type)
		p["ContainerID"] = a.typeIDIn(proc, ref.mod, ref.t)
		p["Offset"] = f.Offset
		if sz := f.Type.ByteSize(); sz >= 0 {
			p["Size"] = sz
		}
		flags := symFlagLittleEndian
		if f.Base {
			flags |= symFlagInheritance
		}
		if f.Artificial {
			flags |= symFlagArtificial
		}
		p["Flags"] = flags
		if f.BitSize > 0 {
			p["BitSize"] = f.BitSize
			p["BitOffset"] = f.BitOffset - 8*f.Offset
		}
	case "E":
		s := ref.t.Strip()
		e := s.Enumerators[ref.index]
		p["Class"] = symClassValue
		p["Name"] = e.Name
		p["TypeID"] = a.typeIDIn(proc, ref.mod, ref.t)
		p["ContainerID"] = a.typeIDIn(proc, ref.mod, ref.t)
		size := ref.t.ByteSize()
		if size <= 0 || size > 8 {
			size = 4
		}
		p["Size"] = size
		b := make([]byte, 8)
		for i := range b {
			b[i] = byte(uint64(e.Value) >> (8 * i))
		}
		p["Value"] = base64.StdEncoding.EncodeToString(b[:size])
	case "L", "G":
		a.variableProps(p, ref)
	}
	return p, true, nil
}

// typeProps fills the properties of a type symbol.
func (a *Agent) typeProps(p map[string]any, proc string, mod uint64, t *variables.Type) {
	p["Class"] = symClassType
	p["TypeClass"] = typeClass(t)
	if t.Name != "" {
		p["Name"] = t.Name
	}
	if s := t.ByteSize(); s >= 0 {
		p["Size"] = s
	}
	flags := 0
	switch t.Kind {
	case variables.KindTypedef:
		flags |= symFlagTypedef
		p["TypeID"] = a.typeIDIn(proc, mod, t.Elem)
	case variables.KindConst:
		flags |= symFlagConst
		p["TypeID"] = a.typeIDIn(proc, mod, t.Elem)
	case variables.KindVolatile:
		flags |= symFlagVolatile
		p["TypeID"] = a.typeIDIn(proc, mod, t.Elem)
	case variables.KindRestrict:
		flags |= symFlagRestrict
		p["TypeID"] = a.typeIDIn(proc, mod, t.Elem)
	case variables.KindPointer, variables.KindMemberPointer:
		p["BaseTypeID"] = a.typeIDIn(proc, mod, t.Elem)
		if t.Container != nil {
			p["ContainerID"] = a.typeIDIn(proc, mod, t.Container)
		}
	case variables.KindReference, variables.KindRValueReference:
		flags |= symFlagReference
		if t.Kind == variables.KindRValueReference {
			flags |= symFlagRValue
		}
		p["BaseTypeID"] = a.typeIDIn(proc, mod, t.Elem)
	case variables.KindArray:
		p["BaseTypeID"] = a.typeIDIn(proc, mod, t.Elem)
		p["IndexTypeID"] = a.typeIDIn(proc, mod, indexType)
		p["LowerBound"] = t.Lower
		if t.Count >= 0 {
			p["Length"] = t.Count
			p["UpperBound"] = t.Lower + t.Count - 1
		}
	case variables.KindStruct:
		flags |= symFlagStruct
	case variables.KindClass:
		flags |= symFlagClass
	case variables.KindUnion:
		flags |= symFlagUnion
	case variables.KindEnum:
		flags |= symFlagEnum
		if t.Elem != nil {
			p["BaseTypeID"] = a.typeIDIn(proc, mod, t.Elem)
		}
	case variables.KindFunction:
		if t.Elem != nil {
			p["BaseTypeID"] = a.typeIDIn(proc, mod, t.Elem)
		}
		if t.Variadic {
			flags |= symFlagVararg
		}
	case variables.KindBase:
		if t.Encoding == variables.EncBoolean {
			flags |= symFlagBool
		}
	}
	if t.Kind != variables.KindTypedef && t.Kind != variables.KindConst && t.Kind != variables.KindVolatile && t.Kind != variables.KindRestrict {
		p["TypeID"] = a.typeIDIn(proc, mod, t)
	}
	p["Flags"] = flags | symFlagLittleEndian
}

// indexType is the type of array indices (TCF's IndexTypeID).
var indexType = &variables.Type{Kind: variables.KindBase, Name: "long", Size: 8, Encoding: variables.EncSigned, Count: -1}

// variableProps fills the properties of a local or global variable,
// locating it when a frame is known.
func (a *Agent) variableProps(p map[string]any, ref *symbolRef) {
	v := ref.v
	proc := string(ref.proc.ID())
	p["Class"] = symClassReference
	p["Name"] = v.Name
	if v.Type != nil {
		p["TypeID"] = a.typeIDIn(proc, ref.mod, v.Type)
		if s := v.Type.ByteSize(); s >= 0 {
			p["Size"] = s
		}
	}
	flags := symFlagLittleEndian
	if v.Param {
		flags |= symFlagParameter
	}
	if v.External {
		flags |= symFlagExternal
	}
	if v.Artificial {
		flags |= symFlagArtificial
	}
	p["Flags"] = flags
	if ref.ee == nil {
		if v.Loc.Kind == variables.LocExpr && len(v.Loc.Expr) == 9 && v.Loc.Expr[0] == 0x03 {
			p["Address"] = leUint(v.Loc.Expr[1:]) + a.moduleBias(ref.proc, ref.mod)
		}
		return
	}
	p["UpdatePolicy"] = 1
	p["OwnerID"] = string(ref.ee.thread.ID())
	p["ContainerID"] = ref.ee.frameID
	loc, err := ref.reader.Locate(v, ref.ee.frame)
	if err != nil {
		return
	}
	switch loc.Place {
	case variables.PlaceMemory:
		p["Address"] = loc.Address
	case variables.PlaceRegister:
		if rid := a.registerID(ref.ee.thread, loc.Register); rid != "" {
			p["Register"] = rid
		}
	case variables.PlaceComputed, variables.PlacePieces:
		if loc.Bytes != nil && loc.Available(0, int64(len(loc.Bytes))) {
			p["Value"] = base64.StdEncoding.EncodeToString(loc.Bytes)
		}
	}
}

func (a *Agent) moduleBias(proc *target.Context, mod uint64) uint64 {
	mods, err := a.session.Modules(proc)
	if err != nil {
		return 0
	}
	for _, m := range mods {
		if m.Start == mod {
			return m.Bias
		}
	}
	return 0
}

// registerSymbolData adds the data-side commands of the Symbols service.
func (a *Agent) registerSymbolData(svc *tcf.Service) {
	ys := &symbolsSvc{a: a}
	queryByID(svc, "getChildren", func(id string) (any, error) { return a.symbolChildren(id) })
	queryByID(svc, "list", func(id string) (any, error) { return a.frameSymbols(id) })
	svc.Command("findInScope", ys.findInScope)
	svc.Command("getArrayType", ys.getArrayType)
	queryByID(svc, "getLocationInfo", func(id string) (any, error) { return a.locationInfo(id) })
}

func (ys *symbolsSvc) findInScope(c *tcf.Call) {
	a := ys.a
	args := c.Args()
	ctx := args.String()
	_ = args.Raw() // ip: the frame's pc decides the scope
	_ = args.Raw() // scope symbol
	name := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ids, err := a.findData(ctx, name)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(ids).Send()
}

func (ys *symbolsSvc) getArrayType(c *tcf.Call) {
	a := ys.a
	args := c.Args()
	id := args.String()
	length := args.Int64()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ref, ok, err := a.parseDataSymbol(id)
	if err == nil && (!ok || ref.t == nil) {
		err = tcf.Errorf(tcf.CodeInvalidContext, "%q is not a type", id)
	}
	if err == nil && (length < 0 || length > 1<<40) {
		err = tcf.Errorf(tcf.CodeInvalidNumber, "array length %d", length)
	}
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	t := &variables.Type{Kind: variables.KindArray, Size: -1, Elem: ref.t, Count: length}
	c.Reply().Error(nil).String(a.typeIDIn(string(ref.proc.ID()), ref.mod, t)).Send()
}

// symbolChildren lists members of composite types, values of enums,
// parameter types of function types, and the variables of a frame.
func (a *Agent) symbolChildren(id string) ([]string, error) {
	if strings.HasPrefix(id, "FP") || strings.HasPrefix(id, "P") {
		return a.frameSymbols(id)
	}
	if strings.HasPrefix(id, "F@") {
		return a.functionParams(id)
	}
	ref, ok, err := a.parseDataSymbol(id)
	if err != nil {
		return nil, err
	}
	out := []string{}
	if !ok || ref.t == nil || ref.kind == "M" || ref.kind == "E" {
		return out, nil
	}
	proc := string(ref.proc.ID())
	s := ref.t.Strip()
	base := strings.TrimPrefix(a.typeIDIn(proc, ref.mod, s), "T@")
	switch s.Kind {
	case variables.KindStruct, variables.KindClass, variables.KindUnion:
		if s.Offset == 0 || ref.mod == 0 {
			return out, nil
		}
		for k := range s.Fields {
			out = append(out, fmt.Sprintf("M@%s@%d", base, k))
		}
	case variables.KindEnum:
		if s.Offset == 0 || ref.mod == 0 {
			return out, nil
		}
		for k := range s.Enumerators {
			out = append(out, fmt.Sprintf("E@%s@%d", base, k))
		}
	case variables.KindFunction:
		for _, pt := range s.Params {
			out = append(out, a.typeIDIn(proc, ref.mod, pt))
		}
	}
	return out, nil
}

// frameSymbols lists the variables visible in a frame (a thread: its top
// frame), parameters and locals, innermost scope first.
func (a *Agent) frameSymbols(id string) ([]string, error) {
	ee, err := a.scopeEnv(id)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ee.vars))
	for _, v := range ee.vars {
		out = append(out, a.variableSymbolID(ee, v))
	}
	return out, nil
}

// findData finds a variable (local first, then global) or a type by name
// in the scope of a frame, thread or process.
func (a *Agent) findData(ctx, name string) ([]string, error) {
	ee, err := a.scopeEnv(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range ee.vars {
		if v.Name == name {
			out = append(out, a.variableSymbolID(ee, v))
			break
		}
	}
	if r := ee.env.Reader; r != nil && ee.frame.Module() != nil {
		proc := string(ee.thread.Process().ID())
		if vs, err := r.Globals(name); err == nil {
			out = append(out, fmt.Sprintf("G@%s@%x@%x", proc, ee.frame.Module().Start, uint64(vs[0].Offset)))
		}
		if ts, err := r.TypesByName(name); err == nil {
			out = append(out, a.typeIDIn(proc, ee.frame.Module().Start, ts[0]))
		}
	}
	if len(out) == 0 {
		return nil, symNotFound("symbol %q not found", name)
	}
	return out, nil
}

// Location command codes (ISymbols.CMD_*).
const (
	cmdNumber   = dwarfexpr.TCFNumber
	cmdAdd      = dwarfexpr.TCFAdd
	cmdArg      = dwarfexpr.TCFArg
	cmdLocation = dwarfexpr.TCFLocation
)

// locationInfo turns a variable's DWARF location at its frame's pc into TCF
// location commands. Common forms become plain commands (an address; the
// frame address plus an offset; a register plus an offset; a register);
// anything else is passed as CMD_LOCATION with the DWARF expression and the
// parameters to evaluate it.
func (a *Agent) locationInfo(id string) (map[string]any, error) {
	ref, ok, err := a.parseDataSymbol(id)
	if err != nil {
		return nil, err
	}
	if !ok || ref.v == nil {
		if ok && ref.kind == "M" {
			f := ref.t.Strip().Fields[ref.index]
			return map[string]any{"ArgCnt": 1, "ValueCmds": flatCommands([]any{[]any{cmdArg, 0}, []any{cmdNumber, f.Offset}, []any{cmdAdd}})}, nil
		}
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "%q has no location", id)
	}
	v := ref.v
	props := map[string]any{"ArgCnt": 0}
	var bias uint64
	pc := uint64(0)
	if ref.ee != nil {
		bias = ref.ee.frame.Bias()
		pc = variables.LookupPC(ref.ee.frame)
	} else {
		bias = a.moduleBias(ref.proc, ref.mod)
	}
	var exprBytes []byte
	switch v.Loc.Kind {
	case variables.LocConst:
		props["Value"] = base64.StdEncoding.EncodeToString(v.Loc.Const)
		props["ValueCmds"] = []any{}
		return props, nil
	case variables.LocExpr:
		exprBytes = v.Loc.Expr
	case variables.LocList:
		for _, e := range v.Loc.List {
			if e.Default || pc >= e.Lo && pc < e.Hi {
				exprBytes = e.Expr
				if !e.Default {
					props["CodeAddr"] = e.Lo + bias
					props["CodeSize"] = e.Hi - e.Lo
					break
				}
			}
		}
	}
	if len(exprBytes) == 0 {
		return nil, tcf.Errorf(tcf.CodeOther, "%s is optimized out here", v.Name)
	}
	var thread *target.Context
	if ref.ee != nil {
		thread = ref.ee.thread
	}
	props["ValueCmds"] = a.valueCmds(exprBytes, bias, thread, ref.proc)
	return props, nil
}

// flatCommands writes location commands the way the C agent does: one flat
// array, each opcode followed by its arguments ([[1,16],[5]] becomes [1,16,5]).
func flatCommands(cmds []any) []any {
	out := []any{}
	for _, c := range cmds {
		if op, ok := c.([]any); ok {
			out = append(out, op...)
		} else {
			out = append(out, c)
		}
	}
	return out
}

// valueCmds writes a variable's location as commands: a place DWARF names
// in one operation as plain commands, anything else as CMD_LOCATION with
// the expression and what its evaluation needs.
func (a *Agent) valueCmds(b []byte, bias uint64, thread *target.Context, proc *target.Context) []any {
	opts := dwarfexpr.TCFOptions{Place: true, AddrBias: bias}
	if thread != nil {
		opts.Reg = func(n int) string { return a.registerID(thread, n) }
	}
	if cmds, ok := dwarfexpr.TCFCommands(b, opts); ok {
		return cmds
	}
	params := map[string]any{"AddrSize": 8, "BigEndian": false, "Machine": 62, "Bias": bias}
	if thread != nil {
		params["RegIdScope"] = string(thread.ID())
	} else {
		params["RegIdScope"] = string(proc.ID())
	}
	return []any{cmdLocation, base64.StdEncoding.EncodeToString(b), params}
}

// functionParams lists the parameters of a function symbol (F@ IDs of
// symbols.go) as variable symbols without a frame (no location).
func (a *Agent) functionParams(id string) ([]string, error) {
	parts := strings.Split(id, "@")
	if len(parts) != 4 {
		return nil, badSymbol(id)
	}
	proc, err := a.lookup(parts[1])
	if err != nil {
		return nil, err
	}
	pc, err1 := strconv.ParseUint(parts[2], 16, 64)
	depth, err2 := strconv.Atoi(parts[3])
	if err1 != nil || err2 != nil || depth < 0 {
		return nil, badSymbol(id)
	}
	mods, err := a.session.Modules(proc)
	if err != nil {
		return nil, err
	}
	m := mods.ForAddress(pc)
	out := []string{}
	if m == nil {
		return out, nil
	}
	r, err := a.readerAt(proc.Process(), m.Start)
	if err != nil {
		return out, nil // no DWARF: no parameters known
	}
	chain, err := r.ScopesAt(pc - m.Bias)
	if err != nil {
		return nil, tcf.Errorf(tcf.CodeInvalidDWARF, "%v", err)
	}
	scopes := variables.FrameScopes(chain, depth)
	if len(scopes) == 0 {
		return out, nil
	}
	for _, v := range scopes[len(scopes)-1].Vars {
		if v.Param {
			out = append(out, fmt.Sprintf("G@%s@%x@%x", proc.Process().ID(), m.Start, uint64(v.Offset)))
		}
	}
	return out, nil
}

// findLocals returns the symbol of the variable called name visible in a
// frame or a thread's top frame (none for other contexts).
func (a *Agent) findLocals(ctx, name string) []string {
	if !strings.HasPrefix(ctx, "FP") && !strings.Contains(ctx, ".") {
		return nil // a process: no frame
	}
	ee, err := a.scopeEnv(ctx)
	if err != nil {
		return nil
	}
	for _, v := range ee.vars {
		if v.Name == name {
			return []string{a.variableSymbolID(ee, v)}
		}
	}
	return nil
}
