// Package perfdata reads the files `perf record` writes (perf.data), in file
// mode and in pipe mode (`perf record -o -`), as a stream of typed records:
// samples with their registers and user stack copies, the mappings, comm, fork
// and exit records that let a reader rebuild each process's address space, lost
// counts, and the header's feature sections (build-ids first).
//
// perf.data comes from outside: every length in it is checked against the
// bytes that are really there, every error names the byte offset where the
// input stopped making sense, and nothing is allocated by an announced length
// beyond a fixed bound (a record is at most 64 KiB by construction; the
// sections perf writes in one piece are capped).
//
// The reader knows the file's layout, not what it means: unwinding samples and
// naming frames happen above it (package perfprofile), through memimage and
// unwind like every other target.
//
// Layout facts worth knowing when reading this code: everything is
// native-endian (only little-endian files are accepted; a byte-swapped magic
// is reported as such); a file header is 104 bytes, a pipe header 16; each
// record starts with {u32 type, u16 misc, u16 size}; the fields of a sample
// follow the order of the bits of its event's sample_type.
package perfdata
