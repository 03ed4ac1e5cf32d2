package core_test

import (
	"fmt"
	"log"

	"github.com/sondedbg/sonde/target/core"
)

// Open a core, list its threads with why they stopped and where, and read the
// bytes at the crashing thread's PC. Problems says what the core could not
// provide (missing files, truncation, memory left out of the dump).
func ExampleOpen() {
	t, err := core.Open("core.1234", core.Options{
		Sysroot:    "/srv/sysroots/board7",
		SearchPath: []string{"./build"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	c := core.Of(t)
	for _, th := range c.Process().Children() {
		_, reason, pc := th.State()
		fmt.Printf("%s stopped (%s %s) at 0x%x\n", th.ID(), reason.Kind, reason.Signal.Name(), pc)
	}
	_, _, at := c.Threads()[0].Context.State()
	insn := make([]byte, 16)
	if n, err := c.Process().ReadMemory(at, insn); err != nil {
		fmt.Printf("only %d bytes at the PC: %v\n", n, err)
	}
	for _, p := range c.Problems() {
		fmt.Println(p)
	}
}
