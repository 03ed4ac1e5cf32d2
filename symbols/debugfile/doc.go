// Package debugfile finds and opens the file that holds a binary's debug
// information, the way gdb does, and reads the small ELF structures that the
// search needs: the GNU build-id note, the .gnu_debuglink section with its
// CRC, and MiniDebugInfo (an xz-compressed ELF in .gnu_debugdata).
//
// Search order (Find), first match wins:
//
//  1. the binary itself, when it has a .debug_info section;
//  2. <dir>/.build-id/xx/yyyy.debug for each debug directory (the build-id
//     of the candidate must equal the binary's);
//  3. the .gnu_debuglink name, CRC-checked, in the binary's directory, in
//     its .debug/ subdirectory, and under <debugdir>/<binary's directory>/;
//  4. debuginfod, when a client is configured.
//
// Missing debug information is normal: Find then returns a Result without a
// file, the list of places it tried, and a one-line hint that tells the user
// how to get the debug information. Corrupt candidates are skipped, and the
// reason, naming the file, is kept in Result.Tried.
package debugfile
