package main

import (
	"path"
	"strings"

	"github.com/sondedbg/sonde/symbols"
)

// gdb prints a source file the way its line table names it: the file's
// directory entry joined with its name, not the full path that symbols
// reports (the compilation directory joined in front). A program built with
// `gcc -g src/main.c` in /home/u/p shows "src/main.c" in gdb's bt, not
// "/home/u/p/src/main.c". Turning one into the other needs the compilation
// unit's DW_AT_comp_dir and DW_AT_name, which the session gives
// (Session.CompileUnit, from symbols' unit index).

// gdbSourceFile turns symbols' full path of a source file into the name gdb
// prints, given the file's compilation unit:
//   - the unit's own file named by an absolute DW_AT_name: that path;
//   - a relative directory entry: the entry and the name ("src/main.c",
//     glibc's "../sysdeps/unix/sysv/linux/read.c");
//   - the unit's own source file, named relatively in an absolute
//     compilation directory: DW_AT_name ("t.c");
//   - before DWARF 5, a file in the compilation directory (directory entry
//     0, which gdb does not prepend): its name, the compilation directory
//     absolute or relative (OCaml's "./stdlib" and "stdlib.ml", a build with
//     -ffile-prefix-map=DIR=.);
//   - anything else (absolute directory entries, DWARF 5's relative
//     compilation directories such as glibc's "./nptl"): the path as
//     symbols has it.
func gdbSourceFile(file string, u *symbols.CompileUnit) string {
	if u == nil || u.CompDir == "" || u.CompDir == "/" {
		return file
	}
	rem, ok := strings.CutPrefix(file, u.CompDir+"/")
	if !ok || rem == "" {
		return file
	}
	switch {
	case file == u.Name:
		// The unit's file named by an absolute path under its compilation
		// directory (gcc -c $PWD/Modules/x.c, as Python's build compiles
		// its modules): the line table's entry is absolute too.
		return file
	case strings.Contains(rem, "/"):
		return rem
	case path.IsAbs(u.CompDir) && rem == u.Name:
		return rem
	case u.Version < 5:
		return rem
	}
	return file
}
