package symbols

// The compile-unit index (which unit covers which address, and every unit's
// header) costs ~3 ms to build for libc's debug file: it walks ~1,700 unit
// headers and .debug_aranges, and decodes the first DIE (and its abbrevs) of
// every unit aranges misses. It is the same on every run, so files that
// persist their inflated sections persist it too, as a second pcache client
// in the same cache file. Only an index built without errors is persisted:
// a damaged file is re-indexed, and its problems reported, on every run.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/pcache"
)

var indexClientID = pcache.ClientID{Name: "symbols.cuindex", Version: 1}

const (
	unitRecord    = 56 // packed dwarf.Unit
	segmentRecord = 12 // start u64, unit index i32
	indexUnits    = "units"
	indexSegments = "segments"
)

// indexClient persists and resurrects one dwarfFile's compile-unit index.
type indexClient struct {
	d   *dwarfFile
	got map[string][]byte // resurrected sections, decoded by loadIndex
}

func (c *indexClient) ID() pcache.ClientID { return indexClientID }

func (c *indexClient) Size(ctx *pcache.PersistContext) ([]pcache.SectionSpec, any, error) {
	return []pcache.SectionSpec{
		{Name: indexUnits, Size: int64(len(c.d.units) * unitRecord), Align: 8},
		{Name: indexSegments, Size: int64(len(c.d.cuMap.start) * segmentRecord), Align: 8},
	}, nil, nil
}

func (c *indexClient) Persist(ctx *pcache.PersistContext, i int, w io.Writer, _ any) error {
	le := binary.LittleEndian
	var buf []byte
	if i == 0 {
		buf = make([]byte, 0, len(c.d.units)*unitRecord)
		for _, cu := range c.d.units {
			h := &cu.hdr
			buf = le.AppendUint64(buf, h.Offset)
			buf = le.AppendUint64(buf, h.DataOffset)
			buf = le.AppendUint64(buf, h.End)
			buf = le.AppendUint64(buf, h.AbbrevOff)
			buf = le.AppendUint64(buf, h.Signature)
			buf = le.AppendUint64(buf, h.TypeOffset)
			buf = le.AppendUint16(buf, h.Version)
			is64 := byte(0)
			if h.Is64 {
				is64 = 1
			}
			buf = append(buf, h.Type, is64, h.AddrSize, 0, 0, 0)
		}
	} else {
		m := &c.d.cuMap
		buf = make([]byte, 0, len(m.start)*segmentRecord)
		for j, s := range m.start {
			buf = le.AppendUint64(buf, s)
			buf = le.AppendUint32(buf, uint32(m.val[j]))
		}
	}
	_, err := w.Write(buf)
	return err
}

func (c *indexClient) Resurrect(f *pcache.File, secs []pcache.Section) error {
	c.got = map[string][]byte{}
	for _, s := range secs {
		c.got[s.Name] = s.Data
	}
	if _, ok := c.got[indexUnits]; !ok {
		return errors.New("no units section")
	}
	if _, ok := c.got[indexSegments]; !ok {
		return errors.New("no segments section")
	}
	return nil
}

// decodeIndex rebuilds units and the address map from persisted sections,
// checking them against the file (the cache is validated, but a wrong index
// must never send a lookup outside .debug_info).
func (d *dwarfFile) decodeIndex(units, segs []byte) ([]*compUnit, segmentMap, error) {
	var m segmentMap
	if len(units)%unitRecord != 0 || len(segs)%segmentRecord != 0 {
		return nil, m, fmt.Errorf("index sections of %d and %d bytes", len(units), len(segs))
	}
	le := binary.LittleEndian
	infoSize := uint64(0)
	if i := d.secIdx[secInfo]; i >= 0 {
		infoSize = d.ef.declaredSize(d.ef.f.Sections[i])
	}
	n := len(units) / unitRecord
	out := make([]*compUnit, n)
	all := make([]compUnit, n) // one allocation for every unit
	prevEnd := uint64(0)
	for i := range out {
		b := units[i*unitRecord:]
		h := dwarf.Unit{
			Offset: le.Uint64(b), DataOffset: le.Uint64(b[8:]), End: le.Uint64(b[16:]),
			AbbrevOff: le.Uint64(b[24:]), Signature: le.Uint64(b[32:]), TypeOffset: le.Uint64(b[40:]),
			Version: le.Uint16(b[48:]), Type: b[50], Is64: b[51] == 1, AddrSize: b[52],
		}
		if h.Offset < prevEnd || h.DataOffset < h.Offset || h.End < h.DataOffset || h.End > infoSize || b[51] > 1 {
			return nil, m, fmt.Errorf("unit %d: bad header record", i)
		}
		prevEnd = h.End
		all[i].file, all[i].hdr = d, h
		out[i] = &all[i]
	}
	ns := len(segs) / segmentRecord
	m.start = make([]uint64, ns)
	m.val = make([]int32, ns)
	for j := 0; j < ns; j++ {
		b := segs[j*segmentRecord:]
		m.start[j], m.val[j] = le.Uint64(b), int32(le.Uint32(b[8:]))
		if j > 0 && m.start[j] <= m.start[j-1] || m.val[j] < -1 || int(m.val[j]) >= n {
			return nil, segmentMap{}, fmt.Errorf("segment %d out of order or out of range", j)
		}
	}
	m.idx = newAddrIndex(m.start)
	return out, m, nil
}

// loadIndex installs a persisted index; false when there is none (or it is
// unusable), and the index must be built.
func (d *dwarfFile) loadIndex() bool {
	p := d.ef.persist
	if p == nil || d.eager {
		return false
	}
	p.ensure(d.ef)
	p.mu.Lock()
	units, okU := p.index[indexUnits]
	segs, okS := p.index[indexSegments]
	p.mu.Unlock()
	if !okU || !okS {
		return false
	}
	us, m, err := d.decodeIndex(units, segs)
	if err != nil {
		p.setErr(err)
		return false
	}
	d.units, d.cuMap = us, m
	return true
}

// persistIndex writes what this run derived for the cache file: sections
// inflated on a miss and, when built is set and the index has no errors,
// the index just built.
func (d *dwarfFile) persistIndex(built bool) {
	p := d.ef.persist
	if p == nil || d.eager {
		return
	}
	var index *dwarfFile
	if built && len(d.indexErrs) == 0 {
		index = d
	}
	p.flush(d.ef, index)
}
