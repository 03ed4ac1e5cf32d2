package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/symbols/debugfile"
)

// Separate debug files are usually shipped with zlib-compressed sections
// (glibc's is 3.5 MB compressed, 10 MB inflated). Inflating them costs more
// than everything else `sonde stack` does together (~60 ms of ~70 ms for a
// few threads), and it is the same work on every run. So the session keeps an
// inflated copy of each compressed debug file in a cache directory and hands
// that to symbols instead: every later run maps it and reads only what its
// lookups touch.
//
// The copy is the original file with the inflated sections appended and a
// new section header table pointing at them: everything else (notes,
// build-id, symbol tables) is byte for byte the original. It is named by the
// original's build-id, size and modification time, so a changed file never
// meets a stale copy. Set SONDE_CACHE_DIR to choose the directory, or to
// "off" to disable the cache.

// debugCacheDir returns the cache directory ("" when disabled).
func debugCacheDir() string {
	if d := os.Getenv("SONDE_CACHE_DIR"); d != "" {
		if d == "off" {
			return ""
		}
		return filepath.Join(d, "debug")
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "sonde", "debug")
}

// minCacheSize: smaller compressed files inflate faster than a cache lookup
// pays off.
const minCacheSize = 256 << 10

// cachedDebugFile returns an inflated copy of binPath's separate debug file,
// making it on first use, or "" when there is none to make (no separate
// debug file, nothing compressed, no cache directory).
func cachedDebugFile(binPath string, search debugfile.Options) string {
	dir := debugCacheDir()
	if dir == "" {
		return ""
	}
	f, err := elf.Open(binPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	res, err := debugfile.Find(context.Background(), binPath, f, search)
	if err != nil {
		return ""
	}
	defer res.Close()
	if res.Method != debugfile.MethodBuildID && res.Method != debugfile.MethodDebugLink || !res.HasDWARF {
		return ""
	}
	fi, err := os.Stat(res.Path)
	if err != nil || fi.Size() < minCacheSize {
		return ""
	}
	id := hex.EncodeToString(res.BuildID)
	if id == "" {
		sum := sha256.Sum256([]byte(res.Path))
		id = hex.EncodeToString(sum[:8])
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%d-%d.debug", id, fi.Size(), fi.ModTime().UnixNano()))
	if _, err := os.Stat(name); err == nil {
		return name
	}
	if !hasCompressedSections(res.File) {
		return ""
	}
	if err := inflateELF(res.Path, name); err != nil {
		return ""
	}
	return name
}

// hasCompressedSections reports whether an ELF file has SHF_COMPRESSED
// sections and no dwz link (whose relative path would not resolve from the
// cache directory).
func hasCompressedSections(f *elf.File) bool {
	found := false
	for _, s := range f.Sections {
		if s.Name == ".gnu_debugaltlink" || strings.HasPrefix(s.Name, ".zdebug") {
			return false
		}
		if s.Flags&elf.SHF_COMPRESSED != 0 && s.Type != elf.SHT_NOBITS {
			found = true
		}
	}
	return found
}

var errNotELF64 = errors.New("not a little-endian ELF64 file")

// inflateELF writes to dst a copy of the ELF file src whose compressed
// sections are inflated (appended after the original bytes, with a new
// section header table). It writes a temporary file and renames it, so
// concurrent sondes never see half a file.
func inflateELF(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if f.Class != elf.ELFCLASS64 || f.ByteOrder != binary.LittleEndian {
		return errNotELF64
	}
	le := binary.LittleEndian
	shoff := le.Uint64(data[0x28:])
	shentsize := uint64(le.Uint16(data[0x3a:]))
	shnum := uint64(len(f.Sections))
	if shentsize != 64 || shoff+shnum*shentsize > uint64(len(data)) {
		return errNotELF64
	}
	// Inflate the sections in parallel: each is its own zlib stream.
	inflated := make([][]byte, len(f.Sections))
	errs := make([]error, len(f.Sections))
	var wg sync.WaitGroup
	for i, s := range f.Sections {
		if s.Flags&elf.SHF_COMPRESSED == 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			inflated[i], errs[i] = s.Data()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	out := bytes.NewBuffer(make([]byte, 0, len(data)+sumLen(inflated)+int(shnum*shentsize)+64))
	out.Write(data)
	headers := append([]byte(nil), data[shoff:shoff+shnum*shentsize]...)
	for i, b := range inflated {
		if b == nil {
			continue
		}
		pad(out, 16)
		h := headers[uint64(i)*shentsize:]
		le.PutUint64(h[8:], le.Uint64(h[8:])&^uint64(elf.SHF_COMPRESSED)) // sh_flags
		le.PutUint64(h[24:], uint64(out.Len()))                           // sh_offset
		le.PutUint64(h[32:], uint64(len(b)))                              // sh_size
		le.PutUint64(h[48:], f.Sections[i].Addralign)                     // sh_addralign (from the chdr)
		out.Write(b)
	}
	pad(out, 8)
	newShoff := out.Len()
	out.Write(headers)
	buf := out.Bytes()
	le.PutUint64(buf[0x28:], uint64(newShoff))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".inflate-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(buf); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

func sumLen(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	return n
}

func pad(b *bytes.Buffer, align int) {
	for b.Len()%align != 0 {
		b.WriteByte(0)
	}
}
