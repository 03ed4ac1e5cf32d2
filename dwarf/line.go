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
	const sec = ".debug_line"
	r := newReader(sec, data, off)
	length, is64 := r.initialLength()
	if r.err != nil {
		return nil, r.err
	}
	if length > r.remaining() {
		return nil, &FormatError{sec, off, "line table length runs past the section end"}
	}
	end := r.off + length
	r.data = data[:end]
	t := &LineTable{Version: r.u16()}
	if t.Version < 2 || t.Version > 5 {
		return nil, &FormatError{sec, off, fmt.Sprintf("unsupported line table version %d", t.Version)}
	}
	if t.Version >= 5 {
		addrSize = r.u8()
		r.u8() // segment selector size
	}
	headerLen := r.offset(is64)
	progStart := r.off + headerLen
	minInst := uint64(r.u8())
	if t.Version >= 4 {
		r.u8() // maximum operations per instruction: 1 on every ISA we read
	}
	defaultStmt := r.u8() != 0
	lineBase := int64(int8(r.u8()))
	lineRange := uint64(r.u8())
	opcodeBase := r.u8()
	if r.err != nil {
		return nil, r.err
	}
	if lineRange == 0 || opcodeBase == 0 {
		return nil, &FormatError{sec, off, "line_range or opcode_base is zero"}
	}
	stdLens := r.bytes(uint64(opcodeBase - 1))
	if t.Version >= 5 {
		dirs, err := readEntryTable(&r, is64, strs, nil, compDir)
		if err != nil {
			return nil, err
		}
		if len(dirs) > 0 && compDir != "" && !strings.HasPrefix(dirs[0], "/") {
			dirs[0] = compDir
		}
		t.Files, err = readEntryTable(&r, is64, strs, dirs, compDir)
		if err != nil {
			return nil, err
		}
	} else {
		dirs := []string{compDir}
		for r.err == nil {
			d := r.cstring()
			if len(d) == 0 {
				break
			}
			dirs = append(dirs, joinDir(compDir, string(d)))
		}
		t.Files = []string{""}
		for r.err == nil {
			name := r.cstring()
			if len(name) == 0 {
				break
			}
			dir := r.uleb()
			r.uleb()
			r.uleb()
			t.Files = append(t.Files, fileName(dirs, dir, string(name)))
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if headerOnly {
		return t, nil
	}
	if progStart > end || progStart < r.off {
		return nil, &FormatError{sec, off, "header length inconsistent with the header"}
	}
	r.off = progStart
	// Rows take 2-3 bytes of program each on typical compiler output.
	t.Rows = make([]LineRow, 0, (end-progStart)/3+1)

	var row LineRow
	reset := func() {
		row = LineRow{File: 1, Line: 1}
		if defaultStmt {
			row.Flags = RowStmt
		}
	}
	reset()
	emit := func() {
		t.Rows = append(t.Rows, row)
		row.Discriminator = 0
	}
	for r.err == nil && r.off < end {
		op := r.u8()
		switch {
		case op >= opcodeBase:
			adj := uint64(op - opcodeBase)
			row.Addr += minInst * (adj / lineRange)
			row.Line = uint32(int64(row.Line) + lineBase + int64(adj%lineRange))
			emit()
		case op == 0:
			n := r.uleb()
			if n == 0 || n > r.remaining() {
				r.fail("bad extended opcode length")
				break
			}
			next := r.off + n
			switch sub := r.u8(); sub {
			case 1: // DW_LNE_end_sequence
				row.Flags |= RowEndSequence
				emit()
				reset()
			case 2: // DW_LNE_set_address
				row.Addr = r.sized(uint8(n - 1))
			case 3: // DW_LNE_define_file
				name := r.cstring()
				dir := r.uleb()
				_ = dir
				t.Files = append(t.Files, string(name))
			case 4: // DW_LNE_set_discriminator
				row.Discriminator = uint32(r.uleb())
			}
			if r.err == nil {
				r.off = next
			}
		case op == 1: // DW_LNS_copy
			emit()
		case op == 2: // DW_LNS_advance_pc
			row.Addr += minInst * r.uleb()
		case op == 3: // DW_LNS_advance_line
			row.Line = uint32(int64(row.Line) + r.sleb())
		case op == 4: // DW_LNS_set_file
			row.File = uint32(r.uleb())
		case op == 5: // DW_LNS_set_column
			row.Column = uint32(r.uleb())
		case op == 6: // DW_LNS_negate_stmt
			row.Flags ^= RowStmt
		case op == 7, op == 10, op == 11: // basic_block, prologue_end, epilogue_begin
		case op == 8: // DW_LNS_const_add_pc
			row.Addr += minInst * (uint64(255-opcodeBase) / lineRange)
		case op == 9: // DW_LNS_fixed_advance_pc
			row.Addr += uint64(r.u16())
		default: // DW_LNS_set_isa and unknown standard opcodes: skip their operands
			for i := 0; i < int(stdLens[op-1]); i++ {
				r.uleb()
			}
		}
	}
	if r.err != nil {
		return t, r.err
	}
	return t, nil
}

// DW_LNCT_* content types of DWARF 5 directory and file entries.
const (
	lnctPath         = 1
	lnctDirectoryIdx = 2
)

// readEntryTable reads a DWARF 5 directory (dirs == nil) or file name table.
func readEntryTable(r *reader, is64 bool, strs LineStrings, dirs []string, compDir string) ([]string, error) {
	nfmt := int(r.u8())
	type fmtPair struct{ content, form uint64 }
	fmts := make([]fmtPair, 0, nfmt)
	for i := 0; i < nfmt && r.err == nil; i++ {
		fmts = append(fmts, fmtPair{r.uleb(), r.uleb()})
	}
	count := r.uleb()
	if r.err != nil {
		return nil, r.err
	}
	if count > r.remaining() {
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
				s = string(r.cstring())
			case formLineStrp, formStrp:
				o := r.offset(is64)
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
				v = r.uleb()
			case formData1:
				v = uint64(r.u8())
			case formData2:
				v = uint64(r.u16())
			case formData4:
				v = uint64(r.u32())
			case formData8:
				v = r.u64()
			case formData16:
				r.skip(16)
			case formBlock:
				r.skip(r.uleb())
			default:
				r.fail(fmt.Sprintf("unsupported form %#x in a line table entry", f.form))
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
