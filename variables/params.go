package variables

import "debug/dwarf"

// A backtrace's arguments (sonde stack, gdb's bt) need of each frame's
// function only its parameters, its inlined calls' parameters and its call
// sites (for entry values), not its locals: decoding a local costs its
// name, type and location, and a function has many more locals than
// parameters. ParamScopesAt decodes a function's tree without them; the
// tree is cached, and a later ScopesAt (locals asked for) decodes the
// function again in full and caches that instead.

// ParamScopesAt is ScopesAt with only the parameters of each scope
// decoded (Scope.Vars holds no local): the scopes of a backtrace's
// arguments. A tree ScopesAt decoded in full is returned as it is.
func (r *Reader) ParamScopesAt(pc uint64) ([]*Scope, error) {
	return r.scopesAt(pc, true)
}

// skipVar reports whether the function being decoded leaves out DIE e: a
// local when only parameters are asked for. Callers hold r.mu.
func (r *Reader) skipVar(e *entry) bool {
	return r.paramsOnly && e.Tag == dwarf.TagVariable
}
