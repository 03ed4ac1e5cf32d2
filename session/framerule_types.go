package session

import "github.com/sondedbg/sonde/unwind/cfi"

// The vocabulary of a FrameRule's row, so front ends read the rules without
// importing the CFI parser: aliases of unwind/cfi's types and kinds.
type (
	// CFIRow is the unwind row of a range of pcs (FrameRule.Row).
	CFIRow = cfi.Row
	// CFIRule is how one register, or the CFA, is recovered.
	CFIRule = cfi.Rule
	// CFIRuleKind names a CFIRule's kind.
	CFIRuleKind = cfi.RuleKind
)

// The kinds of CFIRule.
const (
	RuleUnspecified   = cfi.RuleUnspecified
	RuleUndefined     = cfi.RuleUndefined
	RuleSameValue     = cfi.RuleSameValue
	RuleOffset        = cfi.RuleOffset
	RuleValOffset     = cfi.RuleValOffset
	RuleRegister      = cfi.RuleRegister
	RuleExpression    = cfi.RuleExpression
	RuleValExpression = cfi.RuleValExpression
	RuleCFARegOffset  = cfi.RuleCFARegOffset
	RuleCFAExpression = cfi.RuleCFAExpression
)

// CFIRegs is the number of register columns a CFIRow holds.
const CFIRegs = cfi.NumRegs
