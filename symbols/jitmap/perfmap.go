package jitmap

import (
	"bytes"
	"strconv"
)

// maxLine bounds one perf map line; runtimes write names of a few hundred
// bytes (V8: "LazyCompile:*fn /path/file.js:12:3").
const maxLine = 64 << 10

// ParsePerfMap parses a perf map ("START SIZE name" per line, hexadecimal
// with or without 0x). A damaged line ends the parse: the table holds the
// lines before it and the error names the line. A last line without a newline
// is taken as being written and ignored.
func ParsePerfMap(data []byte) (*Table, error) {
	var syms []Symbol
	for line := 1; len(data) > 0; line++ {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break // being written
		}
		text := data[:nl]
		data = data[nl+1:]
		if len(text) > maxLine {
			return newTable(syms), &FormatError{"perf map", int64(line), "line too long"}
		}
		text = bytes.TrimRight(text, "\r")
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		s, err := parsePerfLine(text)
		if err != "" {
			return newTable(syms), &FormatError{"perf map", int64(line), err}
		}
		if s.Size > 0 {
			syms = append(syms, s)
		}
	}
	return newTable(syms), nil
}

func parsePerfLine(text []byte) (Symbol, string) {
	startF, rest, ok := bytes.Cut(text, []byte{' '})
	if !ok {
		return Symbol{}, "want START SIZE NAME"
	}
	sizeF, name, _ := bytes.Cut(rest, []byte{' '})
	start, ok := parseHex(startF)
	if !ok {
		return Symbol{}, "bad start address " + strconv.Quote(string(startF))
	}
	size, ok := parseHex(sizeF)
	if !ok {
		return Symbol{}, "bad size " + strconv.Quote(string(sizeF))
	}
	if start+size < start {
		return Symbol{}, "range wraps around"
	}
	return Symbol{Start: start, Size: size, Name: string(name)}, ""
}

func parseHex(b []byte) (uint64, bool) {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b), 16, 64)
	return v, err == nil
}
