package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/symbols/debuginfod"
)

func init() {
	register(verb{"symbolize", "print function, file:line and inline frames of addresses (addr2line-compatible)", runSymbolize})
}

type symbolizeFlags struct {
	exe       string
	functions bool
	inlines   bool
	demangle  bool
	addresses bool
	pretty    bool
	basenames bool
	json      bool
	pid       int
}

// shortBools are the single-letter flags that may be bundled ("-fiC"), as
// addr2line allows.
const shortBools = "fiCaps"

func runSymbolize(args []string) int {
	return symbolize(args, os.Stdin, os.Stdout, os.Stderr)
}

// symbolize is the verb with its standard streams as parameters (for tests).
func symbolize(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o symbolizeFlags
	fs := newFlagSet("symbolize", "sonde symbolize [-e FILE | --pid PID] [-f] [-i] [-C] [-a] [-p] [-s] [--json] [ADDR...]",
		"Prints the source location of each address, one per argument or per line of standard\n"+
			"input, in the shape binutils addr2line prints with the same flags. Addresses are hex\n"+
			"link-time addresses of FILE, or (with --pid) run-time addresses of the process.\n"+
			"Lines follow gdb's conventions (last is_stmt row; nothing past a sequence end).")
	for _, n := range []string{"e", "exe"} {
		fs.StringVar(&o.exe, n, "a.out", "the ELF file whose addresses are given")
	}
	boolFlag := func(p *bool, usage string, names ...string) {
		for _, n := range names {
			fs.BoolVar(p, n, false, usage)
		}
	}
	boolFlag(&o.functions, "print function names", "f", "functions")
	boolFlag(&o.inlines, "print the inline chain: inlined frames and their call sites", "i", "inlines")
	boolFlag(&o.demangle, "demangle C++ and Rust names", "C", "demangle")
	boolFlag(&o.addresses, "print each address before its frames", "a", "addresses")
	boolFlag(&o.pretty, "print each frame on one line", "p", "pretty-print")
	boolFlag(&o.basenames, "strip directories from file names", "s", "basenames")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per address with all frame fields")
	fs.IntVar(&o.pid, "pid", 0, "symbolize run-time addresses of process PID across its mapped files")
	fs.SetOutput(stderr)
	if code, ok := parseFlags(fs, expandBundles(args)); !ok {
		return code
	}
	exeSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "e" || f.Name == "exe" {
			exeSet = true
		}
	})
	if o.pid != 0 && exeSet {
		return usageError(fs, "-e and --pid are exclusive")
	}

	var res resolver
	if o.pid != 0 {
		pr, err := newProcessResolver(o.pid, symbolsOptions())
		if err != nil {
			fmt.Fprintf(stderr, "sonde symbolize: %v\n", processGone(o.pid, err))
			return 1
		}
		res = pr
	} else {
		bin, err := symbols.Open(o.exe, symbolsOptions())
		if err != nil {
			fmt.Fprintf(stderr, "sonde symbolize: %v\n", notELFError(o.exe, err))
			return 1
		}
		res = &fileResolver{b: bin}
	}
	defer res.close()

	out := bufio.NewWriterSize(stdout, 64<<10)
	defer out.Flush()
	p := printer{o: o, w: out, stderr: stderr}
	status := 0
	if fs.NArg() > 0 {
		for _, a := range fs.Args() {
			if !p.one(res, a) {
				status = 1
			}
		}
		return status
	}
	in := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := in.ReadString('\n')
		if line != "" {
			if !p.one(res, strings.TrimSpace(line)) {
				status = 1
			}
		}
		// Flush whenever no more input is buffered, so a client that writes
		// one address and waits gets its answer (addr2line flushes per address).
		if in.Buffered() == 0 {
			out.Flush()
		}
		if err == io.EOF {
			return status
		}
		if err != nil {
			fmt.Fprintf(stderr, "sonde symbolize: reading stdin: %v\n", err)
			return 1
		}
	}
}

// expandBundles rewrites "-fiC" as "-f -i -C" when every letter is a known
// single-letter boolean flag.
func expandBundles(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && !strings.Contains(a, "=") {
			body := a[1:]
			if strings.Trim(body, shortBools) == "" {
				for _, c := range body {
					out = append(out, "-"+string(c))
				}
				continue
			}
			// "-eFILE" as addr2line accepts it.
			if body[0] == 'e' {
				out = append(out, "-e", body[1:])
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// parseHexAddr reads an address the way addr2line does: optional 0x, then
// hex digits up to the first other character.
func parseHexAddr(s string) uint64 {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	var v uint64
	for _, c := range s {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return v
		}
		v = v<<4 | d
	}
	return v
}

// resolver turns an address as given into frames.
type resolver interface {
	frames(dst []symbols.Frame, addr uint64) (frames []symbols.Frame, module string, err error)
	addrWidth() int
	hint() string // a one-time "no debug info" hint, or ""
	close()
}

// symbolsOptions: gdb's search for debug files, plus debuginfod when
// DEBUGINFOD_URLS is set.
func symbolsOptions() *symbols.Options {
	// addr2line names functions DWARF gives no linkage name after their
	// ELF symbol.
	o := &symbols.Options{SymbolTableNames: true}
	if c, err := debuginfod.FromEnv(); err == nil && c != nil {
		o.Search.Debuginfod = c
	}
	return o
}

type fileResolver struct {
	b      *symbols.Binary
	hinted bool
}

func (r *fileResolver) frames(dst []symbols.Frame, addr uint64) ([]symbols.Frame, string, error) {
	f, err := r.b.AppendFrames(dst, addr)
	return f, r.b.Path(), err
}

func (r *fileResolver) addrWidth() int {
	if r.b.ELF().Class == 1 { // ELFCLASS32
		return 8
	}
	return 16
}

// hint returns the binary's "how to get debug info" line, once.
func (r *fileResolver) hint() string {
	if r.hinted {
		return ""
	}
	r.hinted = true
	return r.b.Hint()
}

func (r *fileResolver) close() { r.b.Close() }

type printer struct {
	o      symbolizeFlags
	w      *bufio.Writer
	stderr io.Writer
	buf    []symbols.Frame
	warned map[string]bool
}

// one prints the answer for one address; false when it failed.
func (p *printer) one(res resolver, text string) bool {
	addr := parseHexAddr(text)
	frames, module, err := res.frames(p.buf[:0], addr)
	p.buf = frames
	if err != nil {
		if p.warned == nil {
			p.warned = map[string]bool{}
		}
		if msg := err.Error(); !p.warned[msg] {
			p.warned[msg] = true
			fmt.Fprintf(p.stderr, "sonde symbolize: %v\n", err)
		}
	}
	if h := res.hint(); h != "" {
		fmt.Fprintf(p.stderr, "sonde symbolize: %s\n", h)
	}
	if p.o.json {
		p.printJSON(addr, module, frames, err)
		return true
	}
	p.printText(addr, res.addrWidth(), frames)
	return true
}

func (p *printer) printText(addr uint64, width int, frames []symbols.Frame) {
	w, o := p.w, p.o
	if o.addresses {
		var b [24]byte
		hex := strconv.AppendUint(b[:0], addr, 16)
		w.WriteString("0x")
		for i := len(hex); i < width; i++ {
			w.WriteByte('0')
		}
		w.Write(hex)
		if o.pretty {
			w.WriteString(": ")
		} else {
			w.WriteByte('\n')
		}
	}
	if len(frames) == 0 {
		if o.functions {
			if o.pretty {
				w.WriteString("?? ")
			} else {
				w.WriteString("??\n")
			}
		}
		w.WriteString("??:0\n")
		return
	}
	for i, f := range frames {
		if i > 0 {
			if !o.inlines {
				break
			}
			if o.pretty {
				w.WriteString(" (inlined by) ")
			}
		}
		if o.functions {
			// addr2line prints the linkage name, demangled with -C in
			// binutils' style (return types included).
			name := f.Function
			if f.LinkageName != "" {
				name = f.LinkageName
				if o.demangle {
					if d, ok := symbols.DemangleLinkageName(f.LinkageName); ok {
						name = d
					}
					// else the linkage name as it is (a Fortran
					// procedure's __m_MOD_deep), as addr2line -C does
				}
			}
			if name == "" {
				name = "??"
			}
			w.WriteString(name)
			if o.pretty {
				w.WriteString(" at ")
			} else {
				w.WriteByte('\n')
			}
		}
		file := f.File
		if file == "" {
			file = "??"
		} else if o.basenames {
			file = filepath.Base(file)
		}
		w.WriteString(file)
		w.WriteByte(':')
		var num [24]byte
		switch {
		case f.Line == 0:
			w.WriteString("?\n")
		case f.Discriminator != 0 && i == 0:
			w.Write(strconv.AppendInt(num[:0], int64(f.Line), 10))
			w.WriteString(" (discriminator ")
			w.Write(strconv.AppendInt(num[:0], int64(f.Discriminator), 10))
			w.WriteString(")\n")
		default:
			w.Write(strconv.AppendInt(num[:0], int64(f.Line), 10))
			w.WriteByte('\n')
		}
	}
}

type jsonFrame struct {
	Function        string `json:"function,omitempty"`
	LinkageName     string `json:"linkage_name,omitempty"`
	File            string `json:"file,omitempty"`
	Line            int    `json:"line,omitempty"`
	Column          int    `json:"column,omitempty"`
	Discriminator   int    `json:"discriminator,omitempty"`
	Inlined         bool   `json:"inlined"`
	Start           string `json:"start,omitempty"`
	FromSymbolTable bool   `json:"from_symbol_table,omitempty"`
}

type jsonAddr struct {
	Address string      `json:"address"`
	Module  string      `json:"module,omitempty"`
	Frames  []jsonFrame `json:"frames"`
	Error   string      `json:"error,omitempty"`
}

func (p *printer) printJSON(addr uint64, module string, frames []symbols.Frame, err error) {
	j := jsonAddr{Address: fmt.Sprintf("0x%x", addr), Module: module, Frames: []jsonFrame{}}
	if err != nil {
		j.Error = err.Error()
	}
	for _, f := range frames {
		jf := jsonFrame{Function: f.Function, LinkageName: f.LinkageName, File: f.File, Line: f.Line,
			Column: f.Column, Discriminator: f.Discriminator, Inlined: f.Inlined, FromSymbolTable: f.FromSymbolTable}
		if f.Start != 0 {
			jf.Start = fmt.Sprintf("0x%x", f.Start)
		}
		j.Frames = append(j.Frames, jf)
	}
	// C++ names keep their < and > (Encode adds the newline).
	enc := json.NewEncoder(p.w)
	enc.SetEscapeHTML(false)
	enc.Encode(j)
}
