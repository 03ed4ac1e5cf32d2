// Package pcache stores data derived from a file (inflated debug sections,
// indexes) in versioned, validated cache files, after DynamoRIO's persisted
// code caches: deriving it again on every run costs more than reading it.
//
// Clients contribute sections to a cache file through size / persist /
// resurrect callbacks (the Client interface), sharing user data between size
// and persist. Before any client sees a byte of a file, the core checks, in
// order: that the file belongs to the current user and nobody else may write
// it, its size and the footer magic (truncation), the format version, the
// header checksum, the architecture, the identity of the source file the data
// was derived from (build-id, size, modification time), the section table and
// a checksum of every section. A file failing any check is rejected with an
// *Error naming the Reason; nothing in a bad file can crash the reader.
//
// Files are written to a temporary name and renamed into place, so readers
// never see half a file (they are not fsynced: a file a crash tore fails
// validation and is rebuilt); a writer merges what is already on disk
// (sections another run added are kept) under a directory lock, so concurrent
// writers in several processes lose nothing. The cache directory is pruned to
// a size limit, least recently used files first.
//
// File layout (little-endian):
//
//	[0, 192)        header: magic, version, architecture, sizes, table
//	                position and checksum, source identity, header checksum
//	[192, 4096)     zero
//	[4096, table)   sections, each at its alignment, zero padding between
//	[table, footer) section table: per section its client, client version,
//	                name, alignment, offset, size and checksum
//	last 24 bytes   footer: file size, header checksum, footer magic
//
// Checksums are CRC-32C (hardware-assisted: ~25 GB/s here), so validating a
// 10 MB file costs about 0.4 ms; sections are page-aligned in the file and
// the file is memory-mapped, so a client can use a section's bytes in place.
package pcache
