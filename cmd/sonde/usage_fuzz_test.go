package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// FuzzFlagErrorText: rewording any flag error never panics and keeps the
// message non-empty; an unknown flag is named with its dashes.
func FuzzFlagErrorText(f *testing.F) {
	for _, s := range []string{
		"flag provided but not defined: -bogus",
		"flag needs an argument: -core",
		`invalid value "x" for flag -duration: parse error`,
		`invalid boolean value "maybe" for -json: parse error`,
		`invalid value "FOO:x" for flag -listen: bad --listen "FOO:x": want [TCP:]host:port`,
		"flag provided but not defined: -",
		"",
	} {
		f.Add(s)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Duration("duration", time.Second, "")
	fs.Bool("json", false, "")
	fs.Int("F", 99, "")
	f.Fuzz(func(t *testing.T, msg string) {
		got := flagErrorText(fs, msg)
		if msg != "" && got == "" {
			t.Fatalf("%q reworded to nothing", msg)
		}
		if strings.HasPrefix(msg, "flag provided but not defined: -") && len(msg) > 33 && !strings.HasPrefix(got, "unknown flag -") {
			t.Fatalf("%q reworded to %q", msg, got)
		}
	})
}

// FuzzElfKind: any first bytes of a file give a kind or "", never a panic.
func FuzzElfKind(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00"))
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("PERFILE2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if k := elfKind(b); k != "" && !strings.HasPrefix(string(b), "\x7fELF") {
			t.Fatalf("%q is %s", b, k)
		}
	})
}
