package expr

// Node is a parsed expression. Pos is the byte offset of the node in the
// source (of the operator, for operations).
type Node interface{ Pos() int }

type (
	// Ident is a name: a variable, an enumerator, possibly C++-qualified
	// ("ns::name").
	Ident struct {
		P    int
		Name string
	}
	// SymRef is ${ID}: an entity named by a protocol ID (TCF clients build
	// expressions such as "(${type})0x1000", "x.${member}", "${register}").
	SymRef struct {
		P  int
		ID string
	}
	// Register is $name.
	Register struct {
		P    int
		Name string
	}
	// IntLit is an integer or character constant.
	IntLit struct {
		P       int
		Value   uint64
		Suffix  string
		Char    bool
		Decimal bool // written in decimal (C types decimal and other constants differently)
	}
	// FloatLit is a floating constant.
	FloatLit struct {
		P      int
		Value  float64
		Suffix string
	}
	// StringLit is a string literal (without its terminating NUL).
	StringLit struct {
		P     int
		Value []byte
	}
	// Unary is a prefix operator: - + ! ~ * &.
	Unary struct {
		P  int
		Op string
		X  Node
	}
	// IncDec is ++ or --, prefix or postfix.
	IncDec struct {
		P    int
		Op   string
		X    Node
		Post bool
	}
	// Binary is an infix operator, including assignments and the comma.
	Binary struct {
		P    int
		Op   string
		X, Y Node
	}
	// Cond is c ? x : y.
	Cond struct {
		P       int
		C, X, Y Node
	}
	// Member is x.name or x->name; Ref is set instead of Name for
	// x.${member ID}.
	Member struct {
		P     int
		X     Node
		Name  string
		Ref   string
		Arrow bool
	}
	// Index is x[i].
	Index struct {
		P    int
		X, I Node
	}
	// Call is f(args); parsed so that errors can say calls are not evaluated.
	Call struct {
		P    int
		Fn   Node
		Args []Node
	}
	// Cast is (type)x.
	Cast struct {
		P int
		T *TypeName
		X Node
	}
	// SizeofType is sizeof(type); SizeofExpr is sizeof x.
	SizeofType struct {
		P int
		T *TypeName
	}
	SizeofExpr struct {
		P int
		X Node
	}
)

// TypeName is a type as written in a cast or sizeof: specifier words
// ("unsigned", "long"), or a tag ("struct point") or a typedef name, then
// pointer stars, then array dimensions.
type TypeName struct {
	P     int
	Words []string // base type keywords, in order
	Tag   string   // "struct", "union", "enum", "class" or ""
	Name  string   // tag or typedef name ("" for keyword types)
	ByID  string   // a type named by a protocol ID: (${ID})
	Const bool
	Ptrs  int      // number of '*'
	Ref   bool     // C++ '&'
	Dims  []uint64 // array dimensions, outermost first
}

func (n *Ident) Pos() int      { return n.P }
func (n *Register) Pos() int   { return n.P }
func (n *SymRef) Pos() int     { return n.P }
func (n *IntLit) Pos() int     { return n.P }
func (n *FloatLit) Pos() int   { return n.P }
func (n *StringLit) Pos() int  { return n.P }
func (n *Unary) Pos() int      { return n.P }
func (n *IncDec) Pos() int     { return n.P }
func (n *Binary) Pos() int     { return n.P }
func (n *Cond) Pos() int       { return n.P }
func (n *Member) Pos() int     { return n.P }
func (n *Index) Pos() int      { return n.P }
func (n *Call) Pos() int       { return n.P }
func (n *Cast) Pos() int       { return n.P }
func (n *SizeofType) Pos() int { return n.P }
func (n *SizeofExpr) Pos() int { return n.P }
