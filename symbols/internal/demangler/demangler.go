// Package demangler is sonde's single entry to the C++ and Rust
// demanglers: github.com/ianlancetaylor/demangle for the Itanium C++ ABI
// and Rust v0 names, and its own decoder for Rust's legacy names, whose
// identifiers the library reads with the C++ rules (it takes a leading
// underscore for an optional separator and prints
// "_rust_begin_short_backtrace" for "__rust_begin_short_backtrace").
// Every call is bounded in output and turns a demangler panic on a hostile
// name into a refusal.
package demangler

import (
	"errors"
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// MaxOutput bounds a demangled name (bytes): template expansions can grow
// exponentially with the input.
const MaxOutput = 64 << 10

// ErrNotMangled is returned for names the demanglers refuse.
var ErrNotMangled = errors.New("not a mangled name")

// ToString demangles name with the library's options, except for Rust
// legacy names (decoded here; options other than a length bound do not
// apply to them). NoParams drops C++ parameter lists.
func ToString(name string, opts ...demangle.Option) (string, error) {
	if s, ok := RustLegacy(name); ok {
		return s, nil
	}
	return library(name, opts...)
}

// Full demangles a linkage name as binutils does (c++filt, addr2line -C):
// return types of template functions and parameter lists included.
func Full(name string) (string, bool) {
	s, err := ToString(name)
	return s, err == nil
}

// WithoutParams demangles a linkage name without C++ parameter lists
// ("ns::f<int>" for "_ZN2ns1fIiEEvT_"), as symbol tables are searched by
// name.
func WithoutParams(name string) (string, bool) {
	s, err := ToString(name, demangle.NoParams)
	return s, err == nil
}

// Display demangles a linkage name as gdb shows a function: like Full but
// without the return type the demangler prints for template functions
// ("void ns::f<int>(int)" becomes "ns::f<int>(int)").
func Display(name string) (string, bool) {
	_, d, ok := Both(name)
	return d, ok
}

// Both returns Full's and Display's answers, parsing the name once and
// printing the tree twice rather than demangling twice.
func Both(name string) (full, display string, ok bool) {
	if s, ok := RustLegacy(name); ok {
		return s, s, true
	}
	if strings.HasPrefix(name, "_R") {
		s, ok := Full(name)
		return s, s, ok
	}
	a, err := toAST(name)
	marked := err == nil && markPacks(name, a)
	if err != nil {
		return "", "", false
	}
	full, err = astString(a, marked)
	if err != nil {
		return "", "", false
	}
	if bare, ok := withoutReturn(a); ok {
		s, err := astString(bare, marked)
		if err != nil {
			return full, full, true
		}
		return full, s, true
	}
	if mayHaveReturnType(a) {
		// A shape withoutReturn does not know (a clone suffix, a
		// constraint): find the bare name in the full one.
		bare, err := library(name, demangle.NoParams)
		if err == nil && bare != "" {
			if i := strings.Index(full, bare); i > 0 && full[i-1] == ' ' {
				return full, full[i:], true
			}
		}
	}
	return full, full, true
}

// withoutReturn returns a function's tree with the return type removed, or
// false when the tree is not a plain function (or method) with one.
func withoutReturn(a demangle.AST) (demangle.AST, bool) {
	t, ok := a.(*demangle.Typed)
	if !ok {
		return nil, false
	}
	switch ft := t.Type.(type) {
	case *demangle.FunctionType:
		if ft.Return == nil || ft.ForLocalName {
			return nil, false
		}
		c := *ft
		c.Return = nil
		return &demangle.Typed{Name: t.Name, Type: &c}, true
	case *demangle.MethodWithQualifiers:
		inner, ok := ft.Method.(*demangle.FunctionType)
		if !ok || inner.Return == nil || inner.ForLocalName {
			return nil, false
		}
		c := *inner
		c.Return = nil
		m := *ft
		m.Method = &c
		return &demangle.Typed{Name: t.Name, Type: &m}, true
	}
	return nil, false
}

// mayHaveReturnType reports whether a tree could print a return type that
// withoutReturn does not strip: anything but a plain function or method
// (those withoutReturn handles, or that have none).
func mayHaveReturnType(a demangle.AST) bool {
	t, ok := a.(*demangle.Typed)
	if !ok {
		return true
	}
	switch ft := t.Type.(type) {
	case *demangle.FunctionType:
		return false
	case *demangle.MethodWithQualifiers:
		_, ok := ft.Method.(*demangle.FunctionType)
		return !ok
	}
	return true
}

func library(name string, opts ...demangle.Option) (s string, err error) {
	defer func() {
		if recover() != nil {
			s, err = "", ErrNotMangled
		}
	}()
	s, err = demangle.ToString(name, append(opts, demangle.MaxLength(16))...)
	if err == nil && strings.HasPrefix(name, "_Z") && strings.Contains(name, "JE") {
		if a, aerr := demangle.ToAST(name, opts...); aerr == nil && markPacks(name, a) {
			s = unmark(demangle.ASTToString(a, append(opts, demangle.MaxLength(16))...))
		}
	}
	if err == nil && strings.HasPrefix(name, "_R") {
		s = rustEmptyNames(s)
	}
	if err == nil && len(s) > MaxOutput {
		s = s[:MaxOutput]
	}
	return s, err
}

func toAST(name string) (a demangle.AST, err error) {
	defer func() {
		if recover() != nil {
			a, err = nil, ErrNotMangled
		}
	}()
	return demangle.ToAST(name)
}

func astString(a demangle.AST, marked bool) (s string, err error) {
	defer func() {
		if recover() != nil {
			s, err = "", ErrNotMangled
		}
	}()
	s = demangle.ASTToString(a, demangle.MaxLength(16))
	if marked {
		s = unmark(s)
	}
	if len(s) > MaxOutput {
		s = s[:MaxOutput]
	}
	return s, nil
}
