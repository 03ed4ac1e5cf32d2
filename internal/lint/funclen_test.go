package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxFuncLines is the longest a non-test function may be, counted from its
// func line to its closing brace.
const maxFuncLines = 150

// longFuncAllowed names the functions that may be longer: opcode
// interpreters, whose one switch over the opcodes reads best whole. Keys are
// "path/from/module/root.go:Name" (methods as "Recv.Name").
var longFuncAllowed = map[string]string{
	"dwarfexpr/exec.go:Machine.exec": "the DWARF expression interpreter",
	"unwind/cfi/row.go:executor.run": "the CFA instruction interpreter",
}

// TestFunctionLength fails on a non-test function longer than maxFuncLines
// anywhere in the module, outside longFuncAllowed; and on an allowlist entry
// that no longer names a long function, so the list cannot go stale.
func TestFunctionLength(t *testing.T) {
	root := moduleRoot(t)
	long := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		return longFuncs(rel, path, long)
	})
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for key, n := range long {
		if _, ok := longFuncAllowed[key]; !ok {
			bad = append(bad, key+": "+itoa(n)+" lines")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s (over %d; split it into functions that each do one thing)", b, maxFuncLines)
	}
	for key := range longFuncAllowed {
		if _, ok := long[key]; !ok {
			t.Errorf("%s is allowed to be long but is not (or is gone): remove it from longFuncAllowed", key)
		}
	}
}

// longFuncs adds the functions of one file longer than maxFuncLines to long.
func longFuncs(rel, path string, long map[string]int) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		if n <= maxFuncLines {
			continue
		}
		long[filepath.ToSlash(rel)+":"+funcName(fd)] = n
	}
	return nil
}

// funcName is a declaration's name, "Recv.Name" for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
