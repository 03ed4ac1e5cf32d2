package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sondedbg/sonde/target"
)

func init() {
	register(verb{"maps", "print a process's (or core's) memory map", runMaps})
}

func runMaps(args []string) int {
	fs := newFlagSet("maps", "sonde maps [--json] PID\n       sonde maps --core CORE [--exe EXE] [--sysroot DIR] [--json]",
		"Prints the memory map: one line per mapping, shaped like /proc/PID/maps (address range,\n"+
			"permissions, file offset, device, inode, path). A live process is stopped only while\n"+
			"its map is read.")
	asJSON := fs.Bool("json", false, "print JSON")
	tf := addTargetFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	opened, code := tf.open(fs)
	if opened == nil {
		return code
	}
	regions, err := opened.process.MemoryMap()
	pid := opened.process.PID()
	opened.close() // the process continues before anything is printed
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde maps: %v\n", err)
		return 1
	}
	if *asJSON {
		err = writeMapsJSON(os.Stdout, pid, regions)
	} else {
		err = writeMaps(os.Stdout, regions)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde maps: %v\n", err)
		return 1
	}
	return 0
}

// mapsLine formats a region exactly as the kernel formats a line of
// /proc/PID/maps, so the two can be compared byte for byte.
func mapsLine(r target.MemoryRegion) string {
	line := fmt.Sprintf("%08x-%08x %s %08x %02x:%02x %d ", r.Addr, r.End(), r.Perm, r.Offset, r.DevMajor, r.DevMinor, r.Inode)
	if r.FileName == "" {
		return line
	}
	// The kernel pads to a fixed column before the path.
	const column = 25 + 8*6
	if pad := column - len(line); pad > 0 {
		line += strings.Repeat(" ", pad)
	}
	return line + r.FileName
}

func writeMaps(w io.Writer, regions []target.MemoryRegion) error {
	for _, r := range regions {
		if _, err := fmt.Fprintln(w, mapsLine(r)); err != nil {
			return err
		}
	}
	return nil
}

type mapsJSON struct {
	PID     int          `json:"pid"`
	Regions []regionJSON `json:"regions"`
}

type regionJSON struct {
	Start   string `json:"start"`
	End     string `json:"end"`
	Size    uint64 `json:"size"`
	Perm    string `json:"perm"`
	Offset  string `json:"offset"`
	Device  string `json:"device"`
	Inode   uint64 `json:"inode"`
	Path    string `json:"path,omitempty"`
	Section string `json:"section,omitempty"`
	BSS     bool   `json:"bss,omitempty"`
}

func writeMapsJSON(w io.Writer, pid int, regions []target.MemoryRegion) error {
	out := mapsJSON{PID: pid, Regions: []regionJSON{}}
	for _, r := range regions {
		out.Regions = append(out.Regions, regionJSON{
			Start: fmt.Sprintf("0x%x", r.Addr), End: fmt.Sprintf("0x%x", r.End()), Size: r.Size,
			Perm: r.Perm.String(), Offset: fmt.Sprintf("0x%x", r.Offset),
			Device: fmt.Sprintf("%02x:%02x", r.DevMajor, r.DevMinor), Inode: r.Inode,
			Path: r.FileName, Section: r.SectionName, BSS: r.BSS,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
