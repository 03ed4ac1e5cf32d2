package memimage_test

import (
	"errors"
	"fmt"

	"github.com/sondedbg/sonde/memimage"
)

// A post-mortem image: a core segment over a mapped file, with the fallback
// left unset, so what the core left out is reported precisely.
func Example() {
	asid := memimage.ASID{Space: 4242, Generation: 1}
	im := memimage.New("core of 4242")

	// Stand-ins for a mapped file's text and a core segment of its data.
	text, _ := memimage.NewMemorySection("/usr/bin/prog", []byte{0x55, 0x48, 0x89, 0xe5, 0xc3})
	data, _ := memimage.NewMemorySection("core", []byte{1, 2, 3, 4})
	im.Add(text, asid, 0x401000)
	im.Add(data, asid, 0x401004) // newer: replaces the file's last byte

	buf := make([]byte, 8)
	n, _, _ := im.Read(buf, asid, 0x401000)
	fmt.Printf("Read: % x (stops at the section end)\n", buf[:n])

	buf = make([]byte, 12)
	n, err := im.ReadFull(buf, asid, 0x401000)
	var re *memimage.ReadError
	if errors.As(err, &re) {
		fmt.Printf("ReadFull: % x, then nothing at %#x\n", buf[:n], re.Addr)
	}
	// Output:
	// Read: 55 48 89 e5 (stops at the section end)
	// ReadFull: 55 48 89 e5 01 02 03 04, then nothing at 0x401008
}

// A live image: the process as the fallback, a breakpoint hidden by the
// overlay.
func ExampleImage_SetOriginal() {
	asid := memimage.ASID{Space: 4242, Generation: 1}
	process := map[uint64]byte{0x1000: 0x55, 0x1001: 0xcc, 0x1002: 0xe5} // 0xcc: sonde's int3
	im := memimage.New("live 4242")
	im.SetFallback(func(p []byte, _ memimage.ASID, addr uint64) (int, error) {
		n := 0
		for ; n < len(p); n++ {
			b, ok := process[addr+uint64(n)]
			if !ok {
				break
			}
			p[n] = b
		}
		if n == 0 {
			return 0, memimage.ErrNoMap
		}
		return n, nil
	})
	im.SetOriginal(asid, 0x1001, []byte{0x89}) // what the int3 replaced

	buf := make([]byte, 3)
	im.ReadFull(buf, asid, 0x1000)
	fmt.Printf("% x\n", buf)
	// Output: 55 89 e5
}

// A Reader for a stream of small reads, here the words of a stack walk: one
// per goroutine, it serves each read from the window the previous one came
// from, and sees every change to the image.
func ExampleImage_NewReader() {
	asid := memimage.ASID{Space: 4242, Generation: 1}
	im := memimage.New("sample")
	stack, _ := memimage.NewMemorySection("stack", []byte{
		0x10, 0, 0, 0, 0, 0, 0, 0, // a saved frame pointer
		0x34, 0x12, 0x40, 0, 0, 0, 0, 0, // a return address
	})
	im.Add(stack, asid, 0x7ffc0000)

	r := im.NewReader(asid)
	word := make([]byte, 8)
	for addr := uint64(0x7ffc0000); addr < 0x7ffc0010; addr += 8 {
		r.ReadFull(word, addr)
		fmt.Printf("%#x: % x\n", addr, word)
	}
	im.SetOriginal(asid, 0x7ffc0008, []byte{0x99}) // a change shows at once
	r.ReadFull(word, 0x7ffc0008)
	fmt.Printf("%#x: % x\n", 0x7ffc0008, word)
	// Output:
	// 0x7ffc0000: 10 00 00 00 00 00 00 00
	// 0x7ffc0008: 34 12 40 00 00 00 00 00
	// 0x7ffc0008: 99 12 40 00 00 00 00 00
}
