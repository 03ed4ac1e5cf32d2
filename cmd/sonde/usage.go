package main

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The flag package's parse errors, which name a flag with one dash. They are
// compiled on first use, not at start-up: only a mistyped command needs them,
// and compiling them costs every run of every verb (see bench/startup).
var (
	flagUndefined  = lazyRegexp(`(?s)^flag provided but not defined: -+(.+)$`)
	flagNeedsValue = lazyRegexp(`(?s)^flag needs an argument: -+(.+)$`)
	flagBadValue   = lazyRegexp(`(?s)^invalid (?:boolean )?value (".*") for (?:flag )?-+([^:]+): (.*)$`)
)

// lazyRegexp returns a function compiling expr on its first call.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// flagErrorText rewords a flag package parse error of fs in the words of
// sonde's help: the flag spelled as the user types it (--core, -e), and what
// a bad value should look like instead of "parse error".
func flagErrorText(fs *flag.FlagSet, msg string) string {
	if m := flagUndefined().FindStringSubmatch(msg); m != nil {
		return "unknown flag " + dashed(m[1])
	}
	if m := flagNeedsValue().FindStringSubmatch(msg); m != nil {
		return dashed(m[1]) + " needs a value"
	}
	if m := flagBadValue().FindStringSubmatch(msg); m != nil {
		if strings.Contains(m[3], dashed(m[2])) {
			return m[3] // the flag's own Set already said it all
		}
		return fmt.Sprintf("bad value %s for %s: %s", m[1], dashed(m[2]), wantedValue(fs.Lookup(m[2]), m[3]))
	}
	return msg
}

// wantedValue says what flag f takes, in place of the flag package's bare
// "parse error" (kept for values of types it does not know).
func wantedValue(f *flag.Flag, why string) string {
	if f == nil {
		return why
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return why
	}
	switch g.Get().(type) {
	case time.Duration:
		return "want a duration such as 10s, 500ms or 1m30s"
	case int, int64, uint, uint64:
		return "want a whole number"
	case float64:
		return "want a number"
	case bool:
		return "want true or false"
	}
	return why
}

// dashed spells a flag name as sonde's help does: one dash for a letter,
// two for a word.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
