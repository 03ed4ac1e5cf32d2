package profiling

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"

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
// addresses, count u32 name lengths, the names.
type kallsymsClient struct{ k *KernelSymbols }

func (c *kallsymsClient) ID() pcache.ClientID { return pcache.ClientID{Name: "kallsyms", Version: 1} }

func (c *kallsymsClient) Size(*pcache.PersistContext) ([]pcache.SectionSpec, any, error) {
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(c.k.addrs)))
	binary.Write(&buf, binary.LittleEndian, c.k.addrs)
	for i := range c.k.addrs {
		binary.Write(&buf, binary.LittleEndian, uint32(len(c.k.name(i))))
	}
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
	if n > uint64(len(b))/12 {
		return errKallsymsSection
	}
	addrs := b[8 : 8+8*n]
	lens := b[8+8*n : 8+12*n]
	text := string(b[8+12*n:]) // copied: the section is unmapped at Close
	k := &KernelSymbols{addrs: make([]uint64, n), ends: make([]uint32, n), text: text}
	p := uint64(0)
	for i := uint64(0); i < n; i++ {
		k.addrs[i] = binary.LittleEndian.Uint64(addrs[8*i:])
		p += uint64(binary.LittleEndian.Uint32(lens[4*i:]))
		if p > uint64(len(text)) || (i > 0 && k.addrs[i] < k.addrs[i-1]) {
			return errKallsymsSection
		}
		k.ends[i] = uint32(p)
	}
	c.k = k
	return nil
}

// cachedLocalKernel returns the running kernel's symbols from the cache, or
// reads them and stores them there.
func cachedLocalKernel() *KernelSymbols {
	cache := pcache.Default()
	key, id, ok := kernelIdentity()
	if cache == nil || !ok {
		return readLocalKernel()
	}
	cl := &kallsymsClient{}
	if f, err := cache.Load(key, id, cl); err == nil {
		f.Close()
		if cl.k != nil && len(cl.k.addrs) > 0 {
			return cl.k
		}
	}
	k := readLocalKernel()
	if k != nil {
		cache.Store(key, id, &kallsymsClient{k: k})
	}
	return k
}
