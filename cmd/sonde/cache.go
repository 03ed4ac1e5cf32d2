package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sondedbg/sonde/pcache"
)

func init() {
	register(verb{"cache", "list, verify or clear sonde's persisted cache of derived data", runCache})
}

func runCache(args []string) int {
	action := ""
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		action, args = args[0], args[1:]
	}
	fs := newFlagSet("cache", "sonde cache list|verify|clear [--json]",
		"sonde keeps what it derives from files (inflated debug sections, symbol and line indexes)\n"+
			"in validated cache files, so the next stack, symbolize or profile of the same files starts\n"+
			"warm ($XDG_CACHE_HOME/sonde/pcache; SONDE_CACHE_DIR=D moves it, SONDE_NO_CACHE=1 turns it off).\n"+
			"  list    every cache file: size, last use, the source's build-id, its sections\n"+
			"  verify  every check a load makes (owner, size, version, architecture, checksums);\n"+
			"          exits 1 when a file would be rejected (a load rejects and replaces it)\n"+
			"  clear   removes every cache file")
	asJSON := fs.Bool("json", false, "print JSON (list, verify)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if action != "" && fs.NArg() > 0 {
		return usageError(fs, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if action == "" {
		return usageError(fs, "want one of list, verify, clear")
	}
	c := pcache.Default()
	if c == nil {
		fmt.Fprintln(os.Stderr, "sonde cache: the cache is turned off (SONDE_NO_CACHE or SONDE_CACHE_DIR=off)")
		return 1
	}
	switch action {
	case "list", "verify":
		return cacheList(c, action == "verify", *asJSON)
	case "clear":
		n, size, err := c.Clear()
		if err != nil {
			fmt.Fprintf(os.Stderr, "sonde cache: %v\n", err)
			return 1
		}
		fmt.Printf("removed %d files (%s) from %s\n", n, humanBytes(size), c.Dir)
		return 0
	}
	return usageError(fs, fmt.Sprintf("unknown action %q: want list, verify or clear", action))
}

type cacheEntryJSON struct {
	Key      string             `json:"key"`
	Path     string             `json:"path"`
	Size     int64              `json:"size"`
	Used     time.Time          `json:"used"`
	BuildID  string             `json:"build_id,omitempty"`
	Sections []cacheSectionJSON `json:"sections,omitempty"`
	Error    string             `json:"error,omitempty"`
}

type cacheSectionJSON struct {
	Client string `json:"client"`
	Name   string `json:"name"`
	Size   int    `json:"size"`
}

func cacheList(c *pcache.Cache, verify, asJSON bool) int {
	ents, err := c.Entries()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde cache: %v\n", err)
		return 1
	}
	var out []cacheEntryJSON
	bad := 0
	for _, e := range ents {
		j := cacheEntryJSON{Key: e.Key, Path: e.Path, Size: e.Size, Used: e.Used}
		id, secs, err := c.Verify(e)
		if err != nil {
			j.Error = err.Error()
			bad++
		}
		j.BuildID = hex.EncodeToString(id.BuildID)
		for _, s := range secs {
			j.Sections = append(j.Sections, cacheSectionJSON{Client: s.Client, Name: s.Name, Size: s.Size})
		}
		out = append(out, j)
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if out == nil {
			out = []cacheEntryJSON{}
		}
		enc.Encode(map[string]any{"dir": c.Dir, "files": out})
	} else {
		var total int64
		for _, j := range out {
			total += j.Size
			status := "ok"
			if j.Error != "" {
				status = "REJECTED: " + j.Error
			}
			if !verify && j.Error == "" {
				status = fmt.Sprintf("%d sections", len(j.Sections))
			}
			fmt.Printf("%-40s %9s  %s  build-id %-40s %s\n", j.Key, humanBytes(j.Size), j.Used.Format("2006-01-02 15:04"), orDash(j.BuildID), status)
		}
		fmt.Printf("%d files, %s in %s\n", len(out), humanBytes(total), c.Dir)
	}
	if verify && bad > 0 {
		fmt.Fprintf(os.Stderr, "sonde cache: %d of %d files would be rejected (and rebuilt on next use); sonde cache clear removes them\n", bad, len(out))
		return 1
	}
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
