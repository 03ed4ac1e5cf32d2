// Second compile unit for package symbols' multi-unit tests (linked with
// dw_inline.c): a function with an inlined helper.
static inline int dw_second_twice(int x) {
	return 2 * x; // LINE:second_twice
}

int dw_second_entry(int v) {
	return dw_second_twice(v) + 1; // LINE:second_entry
}
