package snapshot

import (
	"io"
	"strings"

	"github.com/sondedbg/sonde/procmaps"
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
type MapsError = procmaps.LineError

// ReadMaps parses the text of /proc/PID/maps (package procmaps). Mappings of
// files keep their path; anonymous mappings are skipped except named ones in
// brackets ([vdso], [stack], ...), which keep their Name and an empty Path.
func ReadMaps(r io.Reader) ([]Mapping, error) {
	maps, err := procmaps.Read(r)
	out := make([]Mapping, 0, len(maps))
	for _, pm := range maps {
		if !strings.HasPrefix(pm.Name, "[") && !strings.HasPrefix(pm.Name, "/") {
			continue // anonymous
		}
		path, _ := pm.Path()
		out = append(out, Mapping{Start: pm.Start, End: pm.End, Offset: pm.Offset, Path: path, Name: pm.Name,
			Exec: pm.Exec, Write: pm.Write})
	}
	return out, err
}
