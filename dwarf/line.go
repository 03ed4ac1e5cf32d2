package dwarf

import (
	"fmt"
	"strings"
)

// LineRow is one row of a line-number matrix.
type LineRow struct {
	Addr          uint64
	File          uint32 // index into LineTable.Files
	Line          uint32
	Column        uint32
	Discriminator uint32
	Flags         uint8 // RowStmt, RowEndSequence
}

// Row flags.
const (
	RowStmt        = 1 << 0
	RowEndSequence = 1 << 1
)

// LineTable is a decoded line-number program: its file table (indexed by the
// file numbers the program and DW_AT_decl_file/DW_AT_call_file use; entries
// that do not name a file are "") and its rows in program order.
type LineTable struct {
	Version uint16
	Files   []string
	Rows    []LineRow
}

// LineStrings are the string sections a DWARF 5 line header may refer to.
type LineStrings struct {
	Str, LineStr []byte
}

// ParseLineTable decodes the line program at off in .debug_line. compDir is
// the unit's DW_AT_comp_dir (used to complete relative directories);
// headerOnly stops after the file table (enough for DW_AT_call_file names).
func ParseLineTable(data []byte, off uint64, compDir string, addrSize uint8, strs LineStrings, headerOnly bool) (*LineTable, error) {
	r := NewCursor(".debug_line", data, off)
	h, err := readLineHeader(&r, data, off, addrSize)
	if err != nil {
		return nil, err
	}
	t := &LineTable{Version: h.version}
	if t.Files, err = readFileTables(&r, h, compDir, strs); err != nil {
		return nil, err
	}
	if headerOnly {
		return t, nil
	}
	if h.progStart > h.end || h.progStart < r.off {
		return nil, &FormatError{r.sec, off, "header length inconsistent with the header"}
	}
	r.off = h.progStart
	// Rows take 2-3 bytes of program each on typical compiler output.
	t.Rows = make([]LineRow, 0, (h.end-h.progStart)/3+1)
	err = runLineProgram(&r, h, t)
	return t, err
}

// lineHeader is what the line program's interpretation needs of its header.
type lineHeader struct {
	version     uint16
	is64        bool
	addrSize    uint8
	minInst     uint64
	defaultStmt bool
	lineBase    int64
	lineRange   uint64
	opcodeBase  uint8
	stdLens     []byte // operand counts of the standard opcodes
	progStart   uint64
	end         uint64
}

// readLineHeader decodes the fixed part of a line program header, leaving r
// at the directory table and limited to the program's bytes.
func readLineHeader(r *Cursor, data []byte, off uint64, addrSize uint8) (*lineHeader, error) {
	length, is64 := r.InitialLength()
	if r.err != nil {
		return nil, r.err
	}
	if length > r.Remaining() {
		return nil, &FormatError{r.sec, off, "line table length runs past the section end"}
	}
	h := &lineHeader{is64: is64, end: r.off + length, addrSize: addrSize}
	r.data = data[:h.end]
	h.version = r.U16()
	if h.version < 2 || h.version > 5 {
		return nil, &FormatError{r.sec, off, fmt.Sprintf("unsupported line table version %d", h.version)}
	}
	if h.version >= 5 {
		h.addrSize = r.U8()
		r.U8() // segment selector size
	}
	headerLen := r.SecOffset(is64)
	h.progStart = r.off + headerLen
	h.minInst = uint64(r.U8())
	if h.version >= 4 {
		r.U8() // maximum operations per instruction: 1 on every ISA we read
	}
	h.defaultStmt = r.U8() != 0
	h.lineBase = int64(int8(r.U8()))
	h.lineRange = uint64(r.U8())
	h.opcodeBase = r.U8()
	if r.err != nil {
		return nil, r.err
	}
	if h.lineRange == 0 || h.opcodeBase == 0 {
		return nil, &FormatError{r.sec, off, "line_range or opcode_base is zero"}
	}
	h.stdLens = r.Bytes(uint64(h.opcodeBase - 1))
	return h, r.err
}

// readFileTables decodes the directory and file tables into file names.
func readFileTables(r *Cursor, h *lineHeader, compDir string, strs LineStrings) ([]string, error) {
	if h.version >= 5 {
		dirs, err := readEntryTable(r, h.is64, strs, nil, compDir)
		if err != nil {
			return nil, err
		}
		if len(dirs) > 0 && compDir != "" && !strings.HasPrefix(dirs[0], "/") {
			dirs[0] = compDir
		}
		return readEntryTable(r, h.is64, strs, dirs, compDir)
	}
	dirs := []string{compDir}
	for r.err == nil {
		d := r.CStr()
		if len(d) == 0 {
			break
		}
		dirs = append(dirs, joinDir(compDir, string(d)))
	}
	files := []string{""}
	for r.err == nil {
		name := r.CStr()
		if len(name) == 0 {
			break
		}
		dir := r.Uleb()
		r.Uleb() // modification time
		r.Uleb() // length
		files = append(files, fileName(dirs, dir, string(name)))
	}
	return files, r.err
}

// runLineProgram interprets the program from r's position to h.end,
// appending t's rows (and the files DW_LNE_define_file adds).
func runLineProgram(r *Cursor, h *lineHeader, t *LineTable) error {
	// The header's numbers in locals: the loop's appends would otherwise
	// make the compiler reload them through h.
	minInst, lineBase, lineRange, opcodeBase, end := h.minInst, h.lineBase, h.lineRange, h.opcodeBase, h.end
	var row LineRow
	reset := func() {
		row = LineRow{File: 1, Line: 1}
		if h.defaultStmt {
			row.Flags = RowStmt
		}
	}
	reset()
	emit := func() {
		t.Rows = append(t.Rows, row)
		row.Discriminator = 0
	}
	for r.err == nil && r.off < end {
		op := r.U8()
		switch {
		case op >= opcodeBase:
			adj := uint64(op - opcodeBase)
			row.Addr += minInst * (adj / lineRange)
			row.Line = uint32(int64(row.Line) + lineBase + int64(adj%lineRange))
			emit()
		case op == 0:
			n := r.Uleb()
			if n == 0 || n > r.Remaining() {
				r.Fail("bad extended opcode length")
				break
			}
			next := r.off + n
			switch sub := r.U8(); sub {
			case 1: // DW_LNE_end_sequence
				row.Flags |= RowEndSequence
				emit()
				reset()
			case 2: // DW_LNE_set_address
				row.Addr = r.Sized(uint8(n - 1))
			case 3: // DW_LNE_define_file: name, directory, time, length
				t.Files = append(t.Files, string(r.CStr()))
			case 4: // DW_LNE_set_discriminator
				row.Discriminator = uint32(r.Uleb())
			}
			if r.err == nil {
				r.off = next
			}
		case op == 1: // DW_LNS_copy
			emit()
		case op == 2: // DW_LNS_advance_pc
			row.Addr += minInst * r.Uleb()
		case op == 3: // DW_LNS_advance_line
			row.Line = uint32(int64(row.Line) + r.Sleb())
		case op == 4: // DW_LNS_set_file
			row.File = uint32(r.Uleb())
		case op == 5: // DW_LNS_set_column
			row.Column = uint32(r.Uleb())
		case op == 6: // DW_LNS_negate_stmt
			row.Flags ^= RowStmt
		case op == 7, op == 10, op == 11: // basic_block, prologue_end, epilogue_begin
		case op == 8: // DW_LNS_const_add_pc
			row.Addr += minInst * (uint64(255-opcodeBase) / lineRange)
		case op == 9: // DW_LNS_fixed_advance_pc
			row.Addr += uint64(r.U16())
		default: // DW_LNS_set_isa and unknown standard opcodes: skip their operands
			for i := 0; i < int(h.stdLens[op-1]); i++ {
				r.Uleb()
			}
		}
	}
	return r.err
}

// DW_LNCT_* content types of DWARF 5 directory and file entries.
const (
	lnctPath         = 1
	lnctDirectoryIdx = 2
)

// readEntryTable reads a DWARF 5 directory (dirs == nil) or file name table.
func readEntryTable(r *Cursor, is64 bool, strs LineStrings, dirs []string, compDir string) ([]string, error) {
	nfmt := int(r.U8())
	type fmtPair struct{ content, form uint64 }
	fmts := make([]fmtPair, 0, nfmt)
	for i := 0; i < nfmt && r.err == nil; i++ {
		fmts = append(fmts, fmtPair{r.Uleb(), r.Uleb()})
	}
	count := r.Uleb()
	if r.err != nil {
		return nil, r.err
	}
	if count > r.Remaining() {
		return nil, &FormatError{r.sec, r.off, fmt.Sprintf("entry count %d larger than the header", count)}
	}
	out := make([]string, 0, count)
	for i := uint64(0); i < count && r.err == nil; i++ {
		var name string
		var dir uint64
		for _, f := range fmts {
			var v uint64
			var s string
			switch f.form {
			case formString:
				s = string(r.CStr())
			case formLineStrp, formStrp:
				o := r.SecOffset(is64)
				src, secName := strs.LineStr, ".debug_line_str"
				if f.form == formStrp {
					src, secName = strs.Str, ".debug_str"
				}
				str, err := CString(secName, src, o)
				if err != nil {
					return nil, err
				}
				s = str
			case formUdata:
				v = r.Uleb()
			case formData1:
				v = uint64(r.U8())
			case formData2:
				v = uint64(r.U16())
			case formData4:
				v = uint64(r.U32())
			case formData8:
				v = r.U64()
			case formData16:
				r.Skip(16)
			case formBlock:
				r.Skip(r.Uleb())
			default:
				r.Fail(fmt.Sprintf("unsupported form %#x in a line table entry", f.form))
			}
			switch f.content {
			case lnctPath:
				name = s
			case lnctDirectoryIdx:
				dir = v
			}
		}
		if dirs == nil {
			out = append(out, joinDir(compDir, name))
		} else {
			out = append(out, fileName(dirs, dir, name))
		}
	}
	return out, r.err
}

func joinDir(compDir, dir string) string {
	if strings.HasPrefix(dir, "/") || compDir == "" {
		return dir
	}
	return compDir + "/" + dir
}

func fileName(dirs []string, dir uint64, name string) string {
	if strings.HasPrefix(name, "/") || dir >= uint64(len(dirs)) || dirs[dir] == "" {
		return name
	}
	return dirs[dir] + "/" + name
}
