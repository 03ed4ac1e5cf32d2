package profiling

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"sync"
	"unsafe"

	"github.com/sondedbg/sonde/pcache"
)

// Reading /proc/kallsyms costs about as much as unwinding a profile's
// samples (the kernel formats ~200k lines), so the running kernel's symbols
// are kept in the persisted cache, keyed by the kernel's build-id and the
// list of loaded modules (module symbols move when modules load).

// kernelIdentity names the running kernel's symbol set: its build-id note
// and a digest of /proc/modules.
func kernelIdentity() (key string, id pcache.Identity, ok bool) {
	notes, err := os.ReadFile("/sys/kernel/notes")
	if err != nil || len(notes) == 0 {
		return "", id, false
	}
	mods, _ := os.ReadFile("/proc/modules")
	h := sha256.New()
	h.Write(notes)
	// Only each module's name and address: its use counts change all the time.
	for _, line := range bytes.Split(mods, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) >= 6 {
			h.Write(f[0])
			h.Write(f[5])
		}
	}
	sum := h.Sum(nil)
	return "kallsyms-" + hex.EncodeToString(sum[:12]), pcache.Identity{BuildID: sum[:20]}, true
}

// kallsymsClient persists KernelSymbols as one section: u64 count, count u64
// addresses, count u32 name ends (name i runs from end i-1 to end i), the
// names.
type kallsymsClient struct {
	k *KernelSymbols
	// inPlace makes Resurrect use the section's bytes where they are mapped
	// instead of copying them: the File must then stay open as long as the
	// symbols (and the names they gave out) are in use.
	inPlace bool
}

func (c *kallsymsClient) ID() pcache.ClientID { return pcache.ClientID{Name: "kallsyms", Version: 2} }

func (c *kallsymsClient) Size(*pcache.PersistContext) ([]pcache.SectionSpec, any, error) {
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(c.k.addrs)))
	binary.Write(&buf, binary.LittleEndian, c.k.addrs)
	binary.Write(&buf, binary.LittleEndian, c.k.ends)
	buf.WriteString(c.k.text)
	return []pcache.SectionSpec{{Name: "symbols", Size: int64(buf.Len()), Align: 8}}, buf.Bytes(), nil
}

func (c *kallsymsClient) Persist(_ *pcache.PersistContext, _ int, w io.Writer, user any) error {
	_, err := w.Write(user.([]byte))
	return err
}

var errKallsymsSection = errors.New("kallsyms section does not add up")

func (c *kallsymsClient) Resurrect(_ *pcache.File, secs []pcache.Section) error {
	b := secs[0].Data
	if len(b) < 8 {
		return errKallsymsSection
	}
	n := binary.LittleEndian.Uint64(b)
	if n == 0 || n > uint64(len(b))/12 {
		return errKallsymsSection
	}
	addrb := b[8 : 8+8*n]
	endb := b[8+8*n : 8+12*n]
	textb := b[8+12*n:]
	k := &KernelSymbols{}
	if c.inPlace && uintptr(unsafe.Pointer(&addrb[0]))%8 == 0 {
		// The mapping is page-aligned and the section 8-aligned: the
		// arrays are usable as they lie (little-endian, as x86-64 is).
		k.addrs = unsafe.Slice((*uint64)(unsafe.Pointer(&addrb[0])), n)
		k.ends = unsafe.Slice((*uint32)(unsafe.Pointer(&endb[0])), n)
		if len(textb) > 0 {
			k.text = unsafe.String(&textb[0], len(textb))
		}
	} else {
		k.addrs, k.ends = make([]uint64, n), make([]uint32, n)
		for i := range k.addrs {
			k.addrs[i] = binary.LittleEndian.Uint64(addrb[8*i:])
			k.ends[i] = binary.LittleEndian.Uint32(endb[4*i:])
		}
		k.text = string(textb)
	}
	// The arrays are checked either way: a lookup must not slice out of
	// range nor binary-search an unsorted table.
	for i := uint64(1); i < n; i++ {
		if k.addrs[i] < k.addrs[i-1] || k.ends[i] < k.ends[i-1] {
			return errKallsymsSection
		}
	}
	if k.ends[n-1] > uint32(len(k.text)) || uint64(len(textb)) > 1<<32-1 {
		return errKallsymsSection
	}
	c.k = k
	return nil
}

// The running kernel's symbols, found once per process: their cache file
// stays mapped for the process's lifetime, the names pointing into it.
var localKernel = sync.OnceValue(func() *KernelSymbols {
	cache := pcache.Default()
	key, id, ok := kernelIdentity()
	if cache == nil || !ok {
		return readLocalKernel()
	}
	// Loaded while the first samples are read and unwound (or by a
	// caller that waits anyway): its 4 MB of checksums on one core leave
	// the other to them.
	cache.Background = true
	cl := &kallsymsClient{inPlace: true}
	if f, err := cache.Load(key, id, cl); err == nil {
		if cl.k != nil {
			return cl.k // f stays open: cl.k lies in it
		}
		f.Close()
	}
	k := readLocalKernel()
	if k != nil {
		cache.Store(key, id, &kallsymsClient{k: k})
	}
	return k
})

// cachedLocalKernel returns the running kernel's symbols from the cache, or
// reads them and stores them there.
func cachedLocalKernel() *KernelSymbols { return localKernel() }
