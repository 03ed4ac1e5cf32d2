// Package memimage is sonde's traced memory image: the one way every layer reads
// target memory after the fact, whatever the target is.
//
// An Image is a set of sections placed at virtual addresses in address spaces,
// plus one fallback read function for every address no section covers, plus an
// overlay of original bytes that hides the patches sonde itself made (breakpoint
// int3s, probe jumps). The same shape serves
//
//   - a live process: the mapped files as sections, process_vm_readv as the
//     fallback, the breakpoint shadow as the overlay;
//   - a core file: the PT_LOAD segments as memory sections over the mapped files;
//   - a perf sample: the sampled stack bytes as a memory section over the files.
//
// The semantics follow libipt's pt_image (Intel's Processor Trace decoder
// library), which solved the same problem for trace decoding:
//
//   - The newest section wins. Adding a section shrinks, splits or removes the
//     older sections it overlaps in every matching address space; split pieces
//     keep their section ID. A failed add changes nothing.
//   - Address spaces are named by an ASID whose fields may be Wildcard; two
//     ASIDs match when every field is equal or either side is Wildcard. A section
//     added with AnyASID is visible in every address space.
//   - A read never crosses a section boundary: Read returns a short count at the
//     end of a section and callers loop (ReadFull does the loop for them).
//   - File sections map their files lazily and report a file whose size, mtime
//     or identity changed since the section was made as a *StaleFileError
//     (or, when the fallback can read the address, read it from the target).
//   - Original bytes set with SetOriginal are consulted first: reads show the
//     target's bytes as they were before sonde patched them.
//   - A SectionCache shares sections (and their mappings) between images, hands
//     out stable SectionIDs and keeps at most a given number of bytes mapped
//     (counting the copies Readers keep), unmapping the least recently used
//     sections first.
//
// # Small reads
//
// Image.Read finds the section for every read and reads a file section's
// mapping under a fault guard (a file truncated under its mapping raises
// SIGBUS, which must become an error, not a crash); together about 18 ns,
// six to seven times an 8- or 16-byte copy. Code that makes many small reads (the
// unwinder's words, the symbolizer's structs) reads through a Reader
// instead (Image.NewReader): it keeps the window of bytes its last read came
// from, copied out of the mapping into memory that cannot fault, and serves
// the next read from the same window with a bounds check and a copy. Its
// results are the image's; see Reader for when it notices a truncated file.
//
// # Concurrency
//
// Reads (Read, ReadFull, ReaderAt, Sections) are safe concurrently with each
// other and with mutations. A Reader is used by one goroutine at a time, but
// any number of Readers may read one image while it changes. Mutations (Add, AddCached, Copy, Remove*, overlay
// changes, SetFallback) are serialised by the image; each one is atomic: a
// concurrent read sees the image entirely before or entirely after it. The
// fallback function may be called from many goroutines at once.
package memimage
