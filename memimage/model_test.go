package memimage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// model is a deliberately naive image: one cell per address per exact ASID,
// with the rules written out byte by byte. The fuzz test runs random
// operations on an Image and a model and compares every read.
type model struct {
	sections, overlay map[ASID]map[uint64]cell
	seq, pieces       int
	fallback          bool
}

// cell is one byte of one piece in one address space.
type cell struct {
	val   byte
	piece int // which add (or copied piece) it came from
	seq   int
	id    SectionID
	name  string
}

func newModel() *model {
	return &model{sections: map[ASID]map[uint64]cell{}, overlay: map[ASID]map[uint64]cell{}}
}

func modelAdd(cells map[ASID]map[uint64]cell, key ASID, addr uint64, c cell, vals []byte) {
	for k, m := range cells {
		if k.Matches(key) {
			for a := addr; a < addr+uint64(len(vals)); a++ {
				delete(m, a)
			}
		}
	}
	if cells[key] == nil {
		cells[key] = map[uint64]cell{}
	}
	for i, v := range vals {
		c.val = v
		cells[key][addr+uint64(i)] = c
	}
}

func (m *model) add(key ASID, addr uint64, vals []byte, name string, id SectionID) {
	m.seq++
	m.pieces++
	modelAdd(m.sections, key, addr, cell{piece: m.pieces, seq: m.seq, id: id, name: name}, vals)
}

func (m *model) setOriginal(key ASID, addr uint64, vals []byte) {
	m.seq++
	m.pieces++
	modelAdd(m.overlay, key, addr, cell{piece: m.pieces, seq: m.seq}, vals)
}

func (m *model) clearOriginal(key ASID, addr, size uint64) {
	for k, cells := range m.overlay {
		if k.Matches(key) {
			for a := addr; a < addr+size; a++ {
				delete(cells, a)
			}
		}
	}
}

// run is a maximal stretch of one piece in one address space: what an Image
// holds as one section.
type run struct {
	key        ASID
	begin, end uint64
	first      cell
	vals       []byte
}

func runs(cells map[ASID]map[uint64]cell) []run {
	var out []run
	for k, m := range cells {
		addrs := make([]uint64, 0, len(m))
		for a := range m {
			addrs = append(addrs, a)
		}
		sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
		for i, a := range addrs {
			c := m[a]
			if i > 0 && addrs[i-1] == a-1 && m[a-1].piece == c.piece {
				r := &out[len(out)-1]
				r.end++
				r.vals = append(r.vals, c.val)
				continue
			}
			out = append(out, run{key: k, begin: a, end: a + 1, first: c, vals: []byte{c.val}})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		if a.key.Space != b.key.Space {
			return a.key.Space < b.key.Space
		}
		return a.key.Generation < b.key.Generation
	})
	return out
}

func (m *model) remove(key ASID, drop func(cell) bool) int {
	n := 0
	for _, r := range runs(m.sections) {
		if r.key.Matches(key) && drop(r.first) {
			n++
			for a := r.begin; a < r.end; a++ {
				delete(m.sections[r.key], a)
			}
		}
	}
	return n
}

// copyFrom mirrors Image.Copy: src's pieces are added oldest first.
func (m *model) copyFrom(src *model) {
	for _, layer := range []struct {
		from map[ASID]map[uint64]cell
		to   map[ASID]map[uint64]cell
	}{{src.sections, m.sections}, {src.overlay, m.overlay}} {
		rs := runs(layer.from)
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].first.seq < rs[j].first.seq })
		for _, r := range rs {
			m.seq++
			m.pieces++
			modelAdd(layer.to, r.key, r.begin, cell{piece: m.pieces, seq: m.seq, id: r.first.id, name: r.first.name}, r.vals)
		}
	}
}

// winner returns the newest cell at a in any space matching q.
func winner(cells map[ASID]map[uint64]cell, q ASID, a uint64) (cell, ASID, bool) {
	var best cell
	var key ASID
	found := false
	for k, m := range cells {
		if c, ok := m[a]; ok && k.Matches(q) && (!found || c.seq > best.seq) {
			best, key, found = c, k, true
		}
	}
	return best, key, found
}

// modelFallback is the fallback of both the image and the model: it serves
// addresses below 200, at most up to the next multiple of 16.
func modelFallback(p []byte, q ASID, addr uint64) (int, error) {
	if addr >= 200 {
		return 0, &UnmappedError{ASID: q, Addr: addr}
	}
	n := min(len(p), int(16-addr%16))
	for i := range n {
		p[i] = fallbackByte(q, addr+uint64(i))
	}
	return n, nil
}

func fallbackByte(q ASID, a uint64) byte { return byte(a*3 + q.Space*5 + q.Generation*11) }

// read is Image.Read, byte by byte.
func (m *model) read(q ASID, addr uint64, size int) (data []byte, id SectionID, ok bool) {
	w, wkey, covered := winner(m.sections, q, addr)
	switch {
	case covered:
		for a := addr; len(data) < size; a++ {
			c, k, ok := winner(m.sections, q, a)
			if !ok || k != wkey || c.piece != w.piece {
				break
			}
			data = append(data, c.val)
		}
		id = w.id
	case m.fallback && addr < 200:
		for a := addr; len(data) < size && (a == addr || a%16 != 0); a++ {
			if _, _, ok := winner(m.sections, q, a); ok {
				break
			}
			data = append(data, fallbackByte(q, a))
		}
	}
	if len(data) > 0 {
		for i := range data {
			if c, _, ok := winner(m.overlay, q, addr+uint64(i)); ok {
				data[i] = c.val
			}
		}
		return data, id, true
	}
	o, okey, ok := winner(m.overlay, q, addr)
	if !ok {
		return nil, 0, false
	}
	for a := addr; len(data) < size; a++ {
		c, k, ok := winner(m.overlay, q, a)
		if _, _, sec := winner(m.sections, q, a); !ok || k != okey || c.piece != o.piece || sec {
			break
		}
		data = append(data, c.val)
	}
	return data, 0, true
}

var modelASIDs = []ASID{{1, 1}, {2, 1}, {1, Wildcard}, {Wildcard, 1}, AnyASID, {2, 2}}

// opReader hands out the fuzz input a byte at a time.
type opReader struct{ data []byte }

func (r *opReader) next() (byte, bool) {
	if len(r.data) == 0 {
		return 0, false
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b, true
}

// runModel applies the operations encoded in data to two images and two models,
// checking reads along the way and everything at the end.
func runModel(t *testing.T, data []byte) {
	r := &opReader{data}
	a, b := New("a"), New("b")
	ma, mb := newModel(), newModel()
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after %q: %s", log, fmt.Sprintf(format, args...))
	}
	// One Reader per address space lives through all the operations, so
	// that windows it made must notice every later change.
	readers := map[ASID]*Reader{}
	// File sections share a cache small enough to evict constantly.
	dir, files := "", 0
	cache := NewSectionCache(600)
	check := func(q ASID, addr uint64, size int) {
		t.Helper()
		want, wantID, ok := ma.read(q, addr, size)
		rd := readers[q]
		if rd == nil {
			rd = a.NewReader(q)
			readers[q] = rd
		}
		for _, how := range []string{"Image.Read", "Reader.Read"} {
			buf := make([]byte, size)
			var n int
			var id SectionID
			var err error
			if how == "Image.Read" {
				n, id, err = a.Read(buf, q, addr)
			} else {
				n, id, err = rd.Read(buf, addr)
			}
			if !ok {
				if err == nil || !errors.Is(err, ErrNoMap) || n != 0 {
					fail("%s(%v, %d, %d) = % x, %v; model: unmapped", how, q, addr, size, buf[:n], err)
				}
				continue
			}
			if err != nil || !bytes.Equal(buf[:n], want) || id != wantID {
				fail("%s(%v, %d, %d) = % x id %d %v; model % x id %d", how, q, addr, size, buf[:n], id, err, want, wantID)
			}
		}
		full, rfull := make([]byte, size), make([]byte, size)
		n, err := a.ReadFull(full, q, addr)
		rn, rerr := rd.ReadFull(rfull, addr)
		var re, rre *ReadError
		if n != rn || !bytes.Equal(full[:n], rfull[:rn]) || (err == nil) != (rerr == nil) ||
			(err != nil && (!errors.As(err, &re) || !errors.As(rerr, &rre) || re.Addr != rre.Addr || re.Valid != rre.Valid)) {
			fail("ReadFull(%v, %d, %d): Reader % x %v; Image % x %v", q, addr, size, rfull[:rn], rerr, full[:n], err)
		}
	}
	for {
		op, ok := r.next()
		if !ok {
			break
		}
		x, _ := r.next()
		y, _ := r.next()
		z, _ := r.next()
		asid := modelASIDs[int(x>>4)%len(modelASIDs)]
		switch op % 10 {
		case 0, 1, 2: // add to a (often) or b
			im, m := a, ma
			if op%10 == 2 {
				im, m = b, mb
			}
			size := 1 + int(z%32)
			vals := make([]byte, size)
			for i := range vals {
				vals[i] = byte(m.pieces*37+i) ^ y
			}
			name := fmt.Sprintf("f%d", x%4)
			id := SectionID(y % 4)
			var s *Section
			var err error
			if op%10 == 1 {
				// A file section: the Reader serves it from resident
				// chunks, the image from the mapping.
				if dir == "" {
					dir = t.TempDir()
				}
				files++
				name = filepath.Join(dir, fmt.Sprint(files))
				if err := os.WriteFile(name, vals, 0o644); err != nil {
					t.Fatal(err)
				}
				s, err = newFileSection(name, 0, uint64(len(vals)), cache)
			} else {
				s, err = NewMemorySection(name, vals)
			}
			if err != nil {
				t.Fatal(err)
			}
			addr := uint64(y)
			if err := im.add(s, asid, addr, id); err != nil {
				fail("add: %v", err)
			}
			m.add(asid, addr, vals, name, id)
			log = append(log, fmt.Sprintf("add%d %s %v @%d+%d id%d", op%10, name, asid, addr, size, id))
		case 3:
			if skipped := a.Copy(b); skipped != 0 {
				fail("Copy skipped %d", skipped)
			}
			ma.copyFrom(mb)
			log = append(log, "copy")
		case 4:
			name := fmt.Sprintf("f%d", x%4)
			got := a.RemoveFile(name, asid)
			if want := ma.remove(asid, func(c cell) bool { return c.name == name }); got != want {
				fail("RemoveFile(%s, %v) = %d, model %d", name, asid, got, want)
			}
			log = append(log, fmt.Sprintf("rmfile %s %v", name, asid))
		case 5:
			got := a.RemoveASID(asid)
			if want := ma.remove(asid, func(cell) bool { return true }); got != want {
				fail("RemoveASID(%v) = %d, model %d", asid, got, want)
			}
			log = append(log, fmt.Sprintf("rmasid %v", asid))
		case 6:
			vals := []byte{z, z ^ 0x55, z + 1, z ^ 0xaa}[:1+int(x%4)]
			if err := a.SetOriginal(asid, uint64(y), vals); err != nil {
				fail("SetOriginal: %v", err)
			}
			ma.setOriginal(asid, uint64(y), vals)
			log = append(log, fmt.Sprintf("orig %v @%d+%d", asid, y, len(vals)))
		case 7:
			size := 1 + uint64(z%8)
			if err := a.ClearOriginal(asid, uint64(y), size); err != nil {
				fail("ClearOriginal: %v", err)
			}
			ma.clearOriginal(asid, uint64(y), size)
			log = append(log, fmt.Sprintf("clear %v @%d+%d", asid, y, size))
		case 8:
			ma.fallback = !ma.fallback
			if ma.fallback {
				a.SetFallback(modelFallback)
			} else {
				a.SetFallback(nil)
			}
			log = append(log, fmt.Sprintf("fallback %v", ma.fallback))
		case 9:
			check(asid, uint64(y), 1+int(z%40))
		}
	}
	// Everything, everywhere.
	for _, q := range modelASIDs {
		for addr := uint64(0); addr < 300; addr++ {
			check(q, addr, 40)
		}
	}
	got := a.Sections()
	want := runs(ma.sections)
	if len(got) != len(want) {
		fail("Sections() has %d entries, model %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ASID != w.key || g.Begin != w.begin || g.End != w.end || g.ID != w.first.id || g.Section.Name() != w.first.name {
			fail("Sections()[%d] = %v [%d,%d) id %d %s; model %v [%d,%d) id %d %s", i,
				g.ASID, g.Begin, g.End, g.ID, g.Section.Name(), w.key, w.begin, w.end, w.first.id, w.first.name)
		}
		vals := make([]byte, g.End-g.Begin)
		g.Section.read(vals, g.SectionOffset)
		if !bytes.Equal(vals, w.vals) {
			fail("Sections()[%d] bytes % x; model % x", i, vals, w.vals)
		}
	}
}

// FuzzImage compares an Image, and Readers of it, with the naive model under
// random operation sequences.
func FuzzImage(f *testing.F) {
	f.Add([]byte{0, 0x10, 10, 15, 0, 0x10, 14, 3, 9, 0x10, 8, 39})                                                                  // split
	f.Add([]byte{0, 0x10, 0, 31, 0, 0x20, 4, 31, 9, 0x40, 0, 39, 5, 0x20, 0, 0})                                                    // wildcard reader, remove asid
	f.Add([]byte{2, 0x10, 4, 20, 0, 0x10, 0, 31, 3, 0, 0, 0, 4, 0x11, 0, 0})                                                        // copy, remove file
	f.Add([]byte{8, 0, 0, 0, 0, 0x10, 20, 5, 6, 0x13, 18, 7, 7, 0x10, 19, 1, 9, 0x10, 16, 30})                                      // fallback + overlay
	f.Add([]byte{6, 0x52, 100, 9, 2, 0x31, 98, 9, 3, 0, 0, 0, 6, 0x02, 99, 1})                                                      // overlay copy
	f.Add([]byte{1, 0x10, 10, 20, 9, 0x10, 12, 7, 6, 0x10, 14, 0, 9, 0x10, 8, 39, 9, 0x10, 13, 3})                                  // file section, Reader window, then a breakpoint in it
	f.Add([]byte{1, 0x10, 0, 31, 1, 0x20, 40, 31, 9, 0x10, 30, 20, 0, 0x10, 20, 5, 9, 0x10, 30, 20, 5, 0x10, 0, 0, 9, 0x10, 30, 4}) // Reader across file sections, a newer section, removal
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 400 {
			data = data[:400] // keep each run quick; the model is O(n^2)
		}
		runModel(t, data)
	})
}

// TestModelRandom runs long random sequences through the model comparison,
// so the comparison runs on every `go test`, not only under -fuzz.
func TestModelRandom(t *testing.T) {
	state := uint64(0x9e3779b97f4a7c15)
	for round := 0; round < 200; round++ {
		data := make([]byte, 4*60)
		for i := range data {
			state ^= state << 13
			state ^= state >> 7
			state ^= state << 17
			data[i] = byte(state)
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) { runModel(t, data) })
	}
}
