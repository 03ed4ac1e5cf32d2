package pcache

import "io"

// ClientID names a client and the version of the layout of its sections.
// A client bumps Version whenever what it writes changes meaning.
type ClientID struct {
	Name    string
	Version uint32
}

// SectionSpec announces one section a client will persist.
type SectionSpec struct {
	Name  string // unique within the client, at most 255 bytes
	Size  int64  // exact number of bytes Persist will write
	Align int    // alignment of the section in the file: a power of two ≤ 4096 (0 means 1)
}

// PersistContext tells a client where its data goes and what the file on
// disk already held for it (DynamoRIO's perscxt).
type PersistContext struct {
	Key      string
	Identity Identity
	// Offset is, in Size, the current end of the file (each section lands at
	// the first multiple of its Align at or after it, in order); in Persist,
	// the offset of the section being written.
	Offset int64
	// Existing are the client's sections in the valid file on disk this
	// write merges with, written by the same client version; nil when there
	// are none. A client that persists a subset of keyed entries can union
	// them with these; sections of other clients are kept by the core.
	Existing []Section
}

// Client contributes sections to cache files and takes them back: the size /
// persist / resurrect callbacks of DynamoRIO's dr_register_persist_ro.
//
// When a file is written the core calls Size once, then Persist once per
// announced section, in order; the user data Size returns is passed to every
// Persist call (state the two share, like the snapshot being written). When a
// file is loaded the core validates all of it first, so Resurrect may assume
// its sections are whole and exactly as persisted.
type Client interface {
	ID() ClientID
	// Size announces the sections to write. Returning no sections writes
	// none (the client's old sections are then dropped from the file).
	Size(ctx *PersistContext) (sections []SectionSpec, user any, err error)
	// Persist writes exactly sections[i].Size bytes of section i to w.
	// An error abandons the whole file.
	Persist(ctx *PersistContext, i int, w io.Writer, user any) error
	// Resurrect receives the client's sections of a loaded file (read-only,
	// valid until the File is closed). It should check what the core cannot
	// (its own invariants); an error rejects the file, and a client must not
	// keep anything from a Load that failed.
	Resurrect(f *File, sections []Section) error
}
