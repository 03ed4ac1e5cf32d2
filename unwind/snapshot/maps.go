package snapshot

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Mapping is one mapping of an address space: the runtime range [Start, End)
// shows the file Path from file offset Offset. A mapping of an image that
// exists only in memory (the vDSO) has its bytes in Data and Path "" (Name
// says what it is).
type Mapping struct {
	Start, End uint64
	Offset     uint64
	Path       string
	Name       string // how the process names it ("[vdso]", or the path)
	Data       []byte // the mapping's bytes when it has no file (vDSO image)
	Exec       bool   // the mapping is executable
	Write      bool   // the mapping is writable (its file bytes may be stale)
}

// MapsError says which line of a /proc/PID/maps text could not be parsed.
type MapsError struct {
	Line int
	Text string
	Err  error
}

func (e *MapsError) Error() string {
	return fmt.Sprintf("snapshot: maps line %d %q: %v", e.Line, e.Text, e.Err)
}

func (e *MapsError) Unwrap() error { return e.Err }

var errMapsFields = fmt.Errorf("want address range, permissions, offset, device, inode")

// maxMapsLine bounds one line of maps text (a path is at most PATH_MAX).
const maxMapsLine = 8192

// ReadMaps parses the text of /proc/PID/maps. Mappings of files keep their
// path; anonymous mappings are skipped except named ones in brackets ([vdso],
// [stack], ...), which keep their Name and an empty Path.
func ReadMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxMapsLine)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		m, keep, err := parseMapsLine(text)
		if err != nil {
			return out, &MapsError{Line: n, Text: text, Err: err}
		}
		if keep {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("snapshot: reading maps: %w", err)
	}
	return out, nil
}

func parseMapsLine(text string) (Mapping, bool, error) {
	var m Mapping
	f := strings.Fields(text)
	if len(f) < 5 {
		return m, false, errMapsFields
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return m, false, errMapsFields
	}
	var err error
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return m, false, err
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
		return m, false, err
	}
	if m.End <= m.Start {
		return m, false, fmt.Errorf("empty or inverted range")
	}
	if len(f[1]) < 4 {
		return m, false, fmt.Errorf("permissions %q", f[1])
	}
	m.Write, m.Exec = f[1][1] == 'w', f[1][2] == 'x'
	if m.Offset, err = strconv.ParseUint(f[2], 16, 64); err != nil {
		return m, false, err
	}
	if len(f) < 6 {
		return m, false, nil // anonymous
	}
	// The path is the rest of the line after the inode (it may hold spaces).
	name := strings.TrimSpace(afterFields(text, 5))
	m.Name = name
	switch {
	case strings.HasPrefix(name, "["):
	case strings.HasPrefix(name, "/"):
		m.Path = strings.TrimSuffix(name, " (deleted)")
	default:
		return m, false, nil
	}
	return m, true, nil
}

// afterFields returns what follows the first n space-separated fields of s.
func afterFields(s string, n int) string {
	i := 0
	for ; n > 0; n-- {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		for i < len(s) && s[i] != ' ' && s[i] != '\t' {
			i++
		}
	}
	return s[i:]
}
