package main

import (
	"testing"

	"github.com/sondedbg/sonde/symbols"
)

func TestGdbSourceFile(t *testing.T) {
	abs := &symbols.CompileUnit{Name: "t.c", CompDir: "/tmp/stk", Version: 5}
	rel := &symbols.CompileUnit{Name: "src/main.c", CompDir: "/tmp/rel", Version: 5}
	glibc := &symbols.CompileUnit{Name: "pthread_create.c", CompDir: "./nptl", Version: 5}
	dw4 := &symbols.CompileUnit{Name: "t.c", CompDir: "/tmp/stk", Version: 4}
	ocaml := &symbols.CompileUnit{Name: "stdlib.ml", CompDir: "./stdlib", Version: 3}
	for _, c := range []struct {
		file string
		u    *symbols.CompileUnit
		want string
	}{
		{"/tmp/stk/t.c", abs, "t.c"},                  // the unit's file
		{"/tmp/stk/local.h", abs, "/tmp/stk/local.h"}, // another file in the directory (DWARF 5)
		{"/tmp/stk/local.h", dw4, "local.h"},          // the same in DWARF 4
		{"/usr/include/stdio.h", abs, "/usr/include/stdio.h"},
		{"/tmp/rel/src/main.c", rel, "src/main.c"},
		{"/tmp/rel/include/inc.h", rel, "include/inc.h"},
		{"./nptl/pthread_create.c", glibc, "./nptl/pthread_create.c"},
		{"./nptl/../sysdeps/nptl/futex-internal.h", glibc, "../sysdeps/nptl/futex-internal.h"},
		{"/x/y.c", nil, "/x/y.c"},
		{"/b/Py/Modules/_ctypes/_ctypes.c", &symbols.CompileUnit{Name: "/b/Py/Modules/_ctypes/_ctypes.c", CompDir: "/b/Py", Version: 5}, "/b/Py/Modules/_ctypes/_ctypes.c"},
		{"./stdlib/stdlib.ml", ocaml, "stdlib.ml"}, // a relative compilation directory before DWARF 5
		{"./stdlib/sub/x.ml", ocaml, "sub/x.ml"},
	} {
		if got := gdbSourceFile(c.file, c.u); got != c.want {
			t.Errorf("gdbSourceFile(%q, %+v) = %q, want %q", c.file, c.u, got, c.want)
		}
	}
}
