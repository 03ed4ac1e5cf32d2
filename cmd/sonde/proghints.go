package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
)

// checkProgram finds the program a verb is to start (PROG after --) the way
// exec does, and when it cannot be started says in one line what is wrong
// with it and what to do, where the launch would report "fork/exec ./prog:
// no such file or directory", "permission denied" or "exec format error".
// It returns the path to start.
func checkProgram(name string) (string, error) {
	if name == "" {
		return "", errors.New("no program to run: give it after -- (-- ./prog ARGS)")
	}
	if !strings.Contains(name, "/") {
		path, err := exec.LookPath(name)
		if err == nil {
			return path, nil
		}
		if st, serr := os.Stat(name); serr == nil && !st.IsDir() {
			return "", fmt.Errorf("%s is not in $PATH: give its path, ./%s, to run the one in this directory", name, name)
		}
		return "", fmt.Errorf("%s: no such program in $PATH; give the program's path after --", name)
	}
	st, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: no such file; give the path of the program to run after --", name)
	case err != nil:
		return "", fmt.Errorf("%s: %w", name, err)
	case st.IsDir():
		return "", fmt.Errorf("%s is a directory, not a program; give the program's path after --", name)
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file, not a program", name)
	}
	b, _, ok := fileStart(name, 18)
	if !ok {
		return name, nil // unreadable: the launch says why
	}
	switch kind := elfKind(b); kind {
	case "an ELF executable", "an ELF shared object or PIE executable":
	case "":
		if !strings.HasPrefix(string(b), "#!") {
			return "", fmt.Errorf("%s is not a program (neither an ELF executable nor a #! script)", name)
		}
	default:
		return "", fmt.Errorf("%s is %s, not a program", name, kind)
	}
	if st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable; make it so with 'chmod +x %s'", name, name)
	}
	return name, nil
}
