// Package expr parses and evaluates C and C++ expressions in the scope of a
// stack frame: what a debugger's watch and variables views, breakpoint
// conditions and TCF's Expressions service ask for.
//
// The language covers registers ($rip, $rax, $eax...), locals, parameters and
// globals, struct and union members (. and ->, including members of base
// classes and anonymous members), array indexing, pointer arithmetic, unary
// * and &, casts to base and named types, sizeof, comparisons, logical and
// bitwise operators, arithmetic with C's usual conversions, the conditional
// operator, character, string, integer and floating literals, and
// assignment (plain and compound), which writes target memory or registers.
// Calls of the program's functions and increments are not evaluated; the
// debugger's own $names ($thread, $printf(...)) are, through the front end's
// Env.Intrinsic. $"name" is a name that may hold any character.
//
// Parsing is bounded (source length and nesting depth) and errors carry the
// byte position they refer to. Evaluation reads the target through
// variables.Frame and never trusts it: unreadable memory, division by zero,
// unknown names and values the compiler optimized away are errors of a
// kind a front end can map to a protocol code (see Error.TCFCode).
package expr
