package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// The hints below turn a parser's low-level complaint about the wrong kind of
// file ("bad magic number", "no ELF magic", "reading the file header:
// unexpected EOF") into one line that names the file, what it is instead,
// and what to do. They look at the file's first bytes themselves, so they
// need no parser's error types, and return other errors unchanged.

// fileStart reads up to n bytes from the start of path; ok is false when the
// file cannot be read (the caller's own error says why).
func fileStart(path string, n int) (b []byte, isDir, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, false
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, true, true
	}
	b = make([]byte, n)
	m, _ := io.ReadFull(f, b)
	return b[:m], false, true
}

// elfKind names an ELF file's e_type, "" when b is not the start of an ELF
// file.
func elfKind(b []byte) string {
	if len(b) < 4 || string(b[:4]) != "\x7fELF" {
		return ""
	}
	if len(b) < 18 {
		return "a truncated ELF file"
	}
	switch binary.LittleEndian.Uint16(b[16:18]) {
	case 1:
		return "an ELF object file"
	case 2:
		return "an ELF executable"
	case 3:
		return "an ELF shared object or PIE executable"
	case 4:
		return "an ELF core file"
	}
	return "an ELF file of unknown type"
}

// coreError explains why core.Open could not open path as a core file.
func coreError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such file", path)
	}
	b, isDir, ok := fileStart(path, 18)
	const how = "give a core file: dump one with 'gcore PID', or a crash's with 'coredumpctl dump -o FILE'"
	switch kind := elfKind(b); {
	case !ok:
		return err
	case isDir:
		return fmt.Errorf("%s is a directory, not a core file; %s", path, how)
	case kind == "":
		return fmt.Errorf("%s is not a core file (not ELF at all); %s", path, how)
	case kind != "an ELF core file":
		return fmt.Errorf("%s is not a core file but %s: give the program with --exe and its core with --core (dump one with 'gcore PID')", path, kind)
	}
	return fmt.Errorf("%s is not a core file sonde can read (%w)", path, err)
}

// checkExe checks --exe names an ELF executable before a core is opened with
// it: a wrong --exe would otherwise be passed over without a word.
func checkExe(path string) error {
	b, isDir, ok := fileStart(path, 18)
	switch kind := elfKind(b); {
	case !ok:
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("--exe %s: %w", path, errors.Unwrap(err))
		}
		return fmt.Errorf("--exe %s: cannot read it", path)
	case isDir:
		return fmt.Errorf("--exe %s is a directory; give the program the core was dumped from", path)
	case kind == "":
		return fmt.Errorf("--exe %s is not an ELF file; give the program the core was dumped from", path)
	case kind == "an ELF core file":
		return fmt.Errorf("--exe %s is a core file; give it with --core, and the program with --exe", path)
	}
	return nil
}

// perfDataError explains why path could not be read as a perf.data file.
func perfDataError(path string, err error) error {
	if path == "-" {
		return err
	}
	const how = "record one with: perf record --call-graph dwarf -- PROGRAM"
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such file; %s, or name it with -i", path, how)
	}
	b, isDir, ok := fileStart(path, 18)
	switch {
	case !ok:
		return err
	case isDir:
		return fmt.Errorf("%s is a directory, not a perf.data file; %s", path, how)
	case len(b) >= 8 && string(b[:8]) == "PERFILE2":
		return err
	case elfKind(b) != "":
		return fmt.Errorf("%s is not a perf.data file (it is %s); %s", path, elfKind(b), how)
	}
	return fmt.Errorf("%s is not a perf.data file (no PERFILE2 magic); %s", path, how)
}

// processGone says pid names no process, when /proc says so; otherwise it
// returns err unchanged.
func processGone(pid int, err error) error {
	if _, serr := os.Stat("/proc/" + strconv.Itoa(pid)); errors.Is(serr, fs.ErrNotExist) {
		return &noProcessError{pid, err}
	}
	return err
}

// noProcessError: the PID names no process; Err is what failed on it.
type noProcessError struct {
	pid int
	Err error
}

func (e *noProcessError) Error() string {
	return fmt.Sprintf("no such process %d (it has exited, or the PID is wrong: see ps or pgrep)", e.pid)
}

func (e *noProcessError) Unwrap() error { return e.Err }
