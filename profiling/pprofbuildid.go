package profiling

import (
	"debug/elf"
	"encoding/hex"
	"strings"

	"github.com/sondedbg/sonde/symbols/debugfile"
)

// setBuildIDs gives each mapping of the profile its file's build-id, as
// `perf buildid-list` lists it: the recording's build-id table (the
// build-id the file had when recorded, the kernel's and the vDSO's), else
// the file's own note (sonde profile, or a file perf left out). pprof
// matches binaries by it (-symbolize, -source_path, the binary a mapping
// shows in -http).
func (pp *Pprof) setBuildIDs(rec *Recording) {
	recorded := map[string]string{}
	if rec != nil {
		for _, id := range rec.reader.BuildIDs {
			if len(id.BuildID) > 0 {
				recorded[id.Filename] = hex.EncodeToString(id.BuildID)
			}
		}
	}
	for _, m := range pp.p.Mapping {
		if m.BuildID != "" {
			continue
		}
		if id, ok := recorded[m.File]; ok {
			m.BuildID = id
		} else if strings.HasPrefix(m.File, "/") {
			// One file is the mappings of every process that ran it.
			id := fileBuildID(m.File)
			recorded[m.File] = id
			m.BuildID = id
		}
	}
}

// fileBuildID is the hex build-id of the ELF file at path ("" if none).
func fileBuildID(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	id, err := debugfile.BuildID(f)
	if err != nil {
		return ""
	}
	return hex.EncodeToString(id)
}
