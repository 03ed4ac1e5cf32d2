package elfsym

import (
	"debug/elf"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/symbols/internal/demangler"
)

// Kind is what a symbol names.
type Kind uint8

const (
	KindNone   Kind = iota // STT_NOTYPE: labels, linker markers
	KindFunc               // STT_FUNC
	KindIFunc              // STT_GNU_IFUNC: an indirect-function resolver
	KindObject             // STT_OBJECT: data
)

func (k Kind) String() string {
	switch k {
	case KindFunc:
		return "func"
	case KindIFunc:
		return "ifunc"
	case KindObject:
		return "object"
	}
	return "notype"
}

// Origin is the table a symbol came from.
type Origin uint8

const (
	OriginSymtab Origin = iota // .symtab (binary, debug file or MiniDebugInfo)
	OriginDynsym               // .dynsym
	OriginPLT                  // synthesized for a PLT stub ("puts@plt")
)

func (o Origin) String() string {
	switch o {
	case OriginSymtab:
		return ".symtab"
	case OriginDynsym:
		return ".dynsym"
	}
	return "plt"
}

// Symbol is one named address range.
type Symbol struct {
	Name    string // linkage (mangled) name without version suffix; "puts@plt" for PLT stubs
	Version string // symbol version ("GLIBC_2.2.5"), "" if none
	Addr    uint64 // link-time address
	Size    uint64 // 0 for labels and markers
	Kind    Kind
	Bind    elf.SymBind
	Origin  Origin
	// VersionSep is 1 or 2 when the table's name carried the version
	// ("name@V", "name@@V": .symtab entries of versioned definitions), 0
	// when it did not (Version then comes from .gnu.version or a copy).
	VersionSep uint8
	// Index is the symbol's entry number in the table it was read from
	// (.symtab or .dynsym; 0 for PLT names), for tools that break ties
	// among aliases by table order, as perf does. (Beside the bytes
	// above, it fits the padding before the struct's end.)
	Index uint32
}

// End is the first address after the symbol (Addr for zero-size symbols),
// saturating instead of wrapping for absurd sizes.
func (s Symbol) End() uint64 {
	e := s.Addr + s.Size
	if e < s.Addr {
		return ^uint64(0)
	}
	return e
}

// Contains reports whether addr belongs to the symbol: inside its size, or
// exactly at its address when it has no size.
func (s Symbol) Contains(addr uint64) bool {
	if s.Size == 0 {
		return addr == s.Addr
	}
	return addr >= s.Addr && addr < s.End()
}

// Demangled returns the demangled C++ or Rust name ("ns::f(int)",
// "std::rt::lang_start"), or Name when it is not mangled. A PLT stub keeps
// its suffix: "std::terminate()@plt".
func (s Symbol) Demangled() string { return Demangle(s.Name) }

// StripVersion splits "puts@GLIBC_2.2.5" or "clock_gettime@@GLIBC_2.17" into
// the base name and the version. Names without '@' are returned unchanged.
func StripVersion(name string) (base, version string) {
	i := strings.IndexByte(name, '@')
	if i <= 0 {
		return name, ""
	}
	return name[:i], strings.TrimLeft(name[i:], "@")
}

// demangleCacheMax bounds the cache; when full it is emptied rather than
// grown (symbol names come from files we do not control).
const demangleCacheMax = 1 << 16

var demangleCache struct {
	sync.Mutex
	m map[string]string
}

// Demangle demangles a C++ (Itanium ABI) or Rust (legacy or v0) linkage
// name, dropping any symbol-version suffix first and keeping an "@plt"
// suffix. Names that are not mangled come back unchanged. Results are cached.
func Demangle(name string) string {
	if base, ok := strings.CutSuffix(name, "@plt"); ok {
		return Demangle(base) + "@plt"
	}
	name, _ = StripVersion(name)
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") {
		return name // fast path: C names are never mangled
	}
	demangleCache.Lock()
	if d, ok := demangleCache.m[name]; ok {
		demangleCache.Unlock()
		return d
	}
	demangleCache.Unlock()
	d := demangleSafe(name)
	demangleCache.Lock()
	if demangleCache.m == nil || len(demangleCache.m) >= demangleCacheMax {
		demangleCache.m = make(map[string]string)
	}
	demangleCache.m[name] = d
	demangleCache.Unlock()
	return d
}

// demangleSafe bounds the output (64 KiB) and turns a demangler panic on a
// hostile name into "leave the name as is".
func demangleSafe(name string) string {
	d, err := demangler.ToString(name)
	if err != nil {
		return name
	}
	return d
}

func kindOf(t elf.SymType) (Kind, bool) {
	switch t {
	case elf.STT_NOTYPE:
		return KindNone, true
	case elf.STT_FUNC:
		return KindFunc, true
	case elf.STT_GNU_IFUNC:
		return KindIFunc, true
	case elf.STT_OBJECT, elf.STT_COMMON:
		return KindObject, true
	}
	// STT_SECTION, STT_FILE and STT_TLS (an offset, not an address) name
	// nothing an address lookup should return.
	return 0, false
}

// better reports whether a is preferred over b as the name for their
// (shared) address, following the rules in the package comment.
func better(a, b *Symbol) bool {
	if (a.Size > 0) != (b.Size > 0) {
		return a.Size > 0
	}
	al, bl := a.Bind == elf.STB_LOCAL, b.Bind == elf.STB_LOCAL
	if al != bl {
		return !al
	}
	if au, bu := leadingUnderscores(a.Name), leadingUnderscores(b.Name); au != bu {
		return au < bu
	}
	if a.Bind != b.Bind {
		return a.Bind == elf.STB_GLOBAL
	}
	if at, bt := a.Kind != KindNone, b.Kind != KindNone; at != bt {
		return at
	}
	if a.Origin != b.Origin {
		return a.Origin < b.Origin
	}
	if len(a.Name) != len(b.Name) {
		return len(a.Name) < len(b.Name)
	}
	return a.Name < b.Name
}

func leadingUnderscores(s string) int {
	n := 0
	for n < len(s) && s[n] == '_' {
		n++
	}
	return n
}
