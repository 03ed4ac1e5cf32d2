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
	// One string for the whole file: names are substrings of it, not an
	// allocation each.
	all := string(data)
	pos := 0
	for line := 1; len(data) > 0; line++ {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break // being written
		}
		text := data[:nl]
		data = data[nl+1:]
		start := pos
		pos += nl + 1
		if len(text) > maxLine {
			return newTable(syms), &FormatError{"perf map", int64(line), "line too long"}
		}
		text = bytes.TrimRight(text, "\r")
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		s, nameOff, err := parsePerfLine(text)
		if err != "" {
			return newTable(syms), &FormatError{"perf map", int64(line), err}
		}
		s.Name = all[start+nameOff : start+len(text)]
		if s.Size > 0 {
			syms = append(syms, s)
		}
	}
	return newTable(syms), nil
}

// parsePerfLine parses one line; the name is text[nameOff:].
func parsePerfLine(text []byte) (s Symbol, nameOff int, err string) {
	startF, rest, ok := bytes.Cut(text, []byte{' '})
	if !ok {
		return s, 0, "want START SIZE NAME"
	}
	sizeF, _, _ := bytes.Cut(rest, []byte{' '})
	nameOff = min(len(startF)+1+len(sizeF)+1, len(text))
	start, ok := parseHex(startF)
	if !ok {
		return s, 0, "bad start address " + strconv.Quote(string(startF))
	}
	size, ok := parseHex(sizeF)
	if !ok {
		return s, 0, "bad size " + strconv.Quote(string(sizeF))
	}
	if start+size < start {
		return s, 0, "range wraps around"
	}
	return Symbol{Start: start, Size: size}, nameOff, ""
}

func parseHex(b []byte) (uint64, bool) {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}
