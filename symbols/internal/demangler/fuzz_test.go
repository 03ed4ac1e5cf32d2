package demangler

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ianlancetaylor/demangle"
)

// FuzzDemangle feeds names from real binaries (C++ templates, lambdas,
// ABI tags, clones, Rust legacy and v0; the checked-in corpus) and their
// mutations to every entry point: no panic escapes, answers are bounded,
// the gdb spelling is the binutils one without a leading return type, and
// a Rust legacy answer is accepted only for names of that shape.
func FuzzDemangle(f *testing.F) {
	for _, s := range []string{
		"_ZN6corpus8PipelineIiLi1EE5stageIZ4mainEUliE_EEiT_",
		"_ZZ4mainENKUliE_clEi",
		"_ZNSt17_Function_handlerIFlRKlEZN5mod148PipelineIlE5stageIZNS3_L10run_staticEiEUlRT_E0_EElS7_EUlS1_E_E10_M_managerERSt9_Any_dataRKSC_St18_Manager_operation",
		"_ZSt16__insertion_sortIN9__gnu_cxx17__normal_iteratorIPiSt6vectorIiSaIiEEEENS0_5__ops15_Iter_comp_iterIZN5mod106detail5TableIiiLi10EE13sorted_weightEvEUlRKiSE_E_EEEvT_SH_T0_.isra.0",
		"_ZN3std3sys9backtrace28__rust_begin_short_backtrace17hfd4b7181f4bb0a57E",
		"_RNvCsfLfy6EI15iL_7___rustc17rust_begin_unwind",
		"_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4sizeEv",
		"_ZN4core3ptr42drop_in_place$LT$alloc..string..String$GT$17h1234abcd5678ef90E",
		"_Z1fIiEvi",
		"_ZN4llvm11PassManagerINS_6ModuleENS_15AnalysisManagerIS1_JEEEJEE3runERS1_RS3_",
		"_GLOBAL__sub_I_main",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if len(name) > 4096 {
			return
		}
		full, okFull := Full(name)
		full2, display, okBoth := Both(name)
		if okFull != okBoth || full != full2 {
			t.Fatalf("Full %q %v, Both %q %v", full, okFull, full2, okBoth)
		}
		if len(full) > MaxOutput || len(display) > MaxOutput {
			t.Fatalf("output of %d/%d bytes", len(full), len(display))
		}
		if !strings.Contains(name, packMarker) && (strings.Contains(full, packMarker) || strings.Contains(display, packMarker)) {
			t.Fatalf("a pack marker left in %q / %q", full, display)
		}
		if okBoth && !strings.HasSuffix(full, display) {
			t.Fatalf("display %q is not a suffix of full %q", display, full)
		}
		if d, ok := Display(name); ok != okBoth || d != display {
			t.Fatalf("Display %q %v, Both %q %v", d, ok, display, okBoth)
		}
		if s, ok := RustLegacy(name); ok {
			if _, shaped := rustLegacyBody(name); !shaped || s == "" {
				t.Fatalf("RustLegacy(%q) = %q for a name without the legacy shape", name, s)
			}
			if utf8.ValidString(name) && !utf8.ValidString(s) {
				t.Fatalf("RustLegacy made invalid UTF-8 %q of %q", s, name)
			}
		}
		ToString(name)
		ToString(name, demangle.NoParams)
	})
}
