package profiling

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/perfdata"
	"github.com/sondedbg/sonde/symbols/debugfile"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// Recording is a perf.data file (or pipe) being turned into stacks.
type Recording struct {
	file   *os.File
	reader *perfdata.Reader
	sorter *perfdata.Sorter
	b      *Builder
	// Warnings are things the user should know about the stacks' quality
	// (a file that changed since the recording, a kernel whose symbols
	// could not be had), each once: those known at OpenRecording, then
	// those Each found.
	Warnings []string
	// Samples counts every sample read; Unwound those whose user stack was
	// walked from a stack copy.
	Samples uint64

	kernelWarned bool
}

// OpenRecording opens a perf.data file ("-": standard input, in pipe mode).
func OpenRecording(path string, opts Options) (*Recording, error) {
	rec := &Recording{}
	var err error
	if path == "-" {
		rec.reader, err = perfdata.NewPipeReader(os.Stdin)
	} else {
		rec.file, err = os.Open(path)
		if err != nil {
			return nil, err
		}
		st, serr := rec.file.Stat()
		if serr != nil {
			rec.file.Close()
			return nil, serr
		}
		// The reader reads the file in chunks and decodes the records
		// where they lie; the samples' stacks are never copied. (Mapping
		// the file instead costs more: a fault and a TLB miss for every
		// page, where a read fills a few buffers again and again.)
		rec.reader, err = perfdata.Open(rec.file, st.Size())
	}
	if err != nil {
		rec.closeFile()
		return nil, err
	}
	rec.sorter = perfdata.NewSorter(rec.reader, 0)
	rec.sorter.SetLazySamples(true) // the workers decode the samples (Each)
	rec.b = NewBuilder(opts)
	rec.prepare()
	return rec, nil
}

// prepare matches the recording's build-ids with the files on this machine
// and finds the kernel's and the vDSO's symbols.
func (rec *Recording) prepare() {
	b := rec.b
	b.files = map[string]string{}
	for _, id := range rec.reader.BuildIDs {
		switch id.Filename {
		case "[kernel.kallsyms]":
			if len(id.BuildID) == 0 {
				continue // perf record -z writes no build-ids: the fallback below
			}
			if b.opts.Kernel == nil && b.kernelSyms == nil {
				// Loaded on another core while the first records are
				// read; the first kernel frame waits for it.
				buildID := id.BuildID
				b.kernelSyms = sync.OnceValue(func() *KernelSymbols {
					if k := RunningKernel(buildID); k != nil {
						return k
					}
					return cachedKallsyms(buildID)
				})
				go b.kernelSyms()
			}
		case "[vdso]":
			if len(id.BuildID) == 0 {
				if rec.sameKernel() {
					b.vdso = localVDSO()
				}
				continue
			}
			if data := localVDSO(); data != nil && sameBuildID(data, id.BuildID) {
				b.vdso = data
			} else if data, err := os.ReadFile(buildIDCachePath("[vdso]", id.BuildID, "vdso")); err == nil {
				b.vdso = data
			}
		default:
			if !strings.HasPrefix(id.Filename, "/") || len(id.BuildID) == 0 {
				continue // no build-id to check the file against: used as it is
			}
			if fileBuildIDIs(id.Filename, id.BuildID) {
				continue
			}
			cached := buildIDCachePath(id.Filename, id.BuildID, "elf")
			if fileBuildIDIs(cached, id.BuildID) {
				b.files[id.Filename] = cached
				continue
			}
			b.files[id.Filename] = ""
			rec.warn(fmt.Sprintf("%s changed since the recording (build-id %x not found there nor in perf's build-id cache): its frames are unnamed", id.Filename, id.BuildID))
		}
	}
	if b.opts.Kernel == nil && b.kernelSyms == nil {
		// No build-id names the kernel: a pipe-mode recording (its
		// build-ids come last, if at all) or one perf record -z made.
		// perf then names kernel frames from the running kernel's
		// symbols, and so does sonde when the recording's kernel release
		// is the running one's (or unknown, as in a pipe).
		if rec.sameKernel() {
			b.kernelSyms = sync.OnceValue(LocalKernel)
			go b.kernelSyms()
		} else {
			b.kernelSyms = func() *KernelSymbols { return nil }
		}
	}
}

// sameKernel reports whether the recording was made on the running kernel
// as far as its header tells without a build-id: the same release, or no
// release recorded (a pipe, whose header features come as records later).
func (rec *Recording) sameKernel() bool {
	release := rec.reader.Header.OSRelease
	if release == "" {
		return true
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	return unix.ByteSliceToString(u.Release[:]) == release
}

func (rec *Recording) warn(msg string) { rec.Warnings = append(rec.Warnings, msg) }

// checkKernel adds the warning that kernel frames went unnamed, when the
// recording's kernel symbols could not be found.
func (rec *Recording) checkKernel() {
	if rec.b.kernelSyms != nil && rec.b.opts.Kernel == nil && rec.b.kernelSyms() == nil && !rec.kernelWarned {
		rec.kernelWarned = true
		rec.warn("kernel frames are unnamed: the recording's kernel is not the running one (or /proc/kallsyms hides addresses) and perf's build-id cache has no kallsyms for it")
	}
}

// Header is what the recording says of itself.
func (rec *Recording) Header() *perfdata.Header { return &rec.reader.Header }

// Lost is how many samples the kernel dropped.
func (rec *Recording) Lost() uint64 { return rec.b.Lost }

// Close releases the recording and every file its stacks needed.
func (rec *Recording) Close() error {
	rec.reader.Close()
	rec.b.Close()
	return rec.closeFile()
}

func (rec *Recording) closeFile() error {
	if rec.file != nil {
		return rec.file.Close()
	}
	return nil
}

// buildIDCachePath is where perf's build-id cache keeps a file:
// $HOME/.debug/<path>/<build-id>/<kind>.
func buildIDCachePath(path string, id []byte, kind string) string {
	home := os.Getenv("HOME")
	if home == "" {
		home = "/root"
	}
	return filepath.Join(home, ".debug", path, hexID(id), kind)
}

func cachedKallsyms(id []byte) *KernelSymbols {
	f, err := os.Open(buildIDCachePath("[kernel.kallsyms]", id, "kallsyms"))
	if err != nil {
		return nil
	}
	defer f.Close()
	k, err := ReadKallsyms(f)
	if err != nil || len(k.addrs) == 0 {
		return nil
	}
	return k
}

// fileBuildIDIs reports whether the ELF file at path has build-id id.
func fileBuildIDIs(path string, id []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return buildIDIs(f, id)
}

func sameBuildID(data []byte, id []byte) bool { return buildIDIs(bytes.NewReader(data), id) }

// buildIDIs reports whether the ELF file r has build-id id. The PT_NOTE
// segment answers from three small reads (this runs for every file of the
// recording before the first sample): a match there is final; anything
// else asks the note sections, through debug/elf, as BuildID does.
func buildIDIs(r io.ReaderAt, id []byte) bool {
	if got, err := debugfile.NoteBuildID(r); err == nil && got != nil && bytes.Equal(got, id) {
		return true
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return false
	}
	got, err := debugfile.BuildID(f)
	return err == nil && bytes.Equal(got, id)
}

// localVDSO copies this process's vDSO (every process of the running kernel
// has the same one).
func localVDSO() []byte {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	maps, _ := snapshot.ReadMaps(f)
	for _, m := range maps {
		if m.Name != "[vdso]" || m.End-m.Start > 1<<20 {
			continue
		}
		mem, err := os.Open("/proc/self/mem")
		if err != nil {
			return nil
		}
		defer mem.Close()
		buf := make([]byte, m.End-m.Start)
		if _, err := mem.ReadAt(buf, int64(m.Start)); err != nil {
			return nil
		}
		return buf
	}
	return nil
}
