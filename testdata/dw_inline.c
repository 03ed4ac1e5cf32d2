// Test program for package symbols: inlining (always_inline, static inline at
// -O2), cold splitting, IPA clones, globals. Keep line numbers stable: tests
// look lines up by the markers in comments ("LINE:name").
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dw_global_counter = 7;
static int dw_static_table[16];

static inline __attribute__((always_inline)) int square(int x) {
	return x * x; // LINE:square
}

static inline int add_squares(int a, int b) {
	return square(a) + square(b); // LINE:add_squares
}

__attribute__((cold, noinline)) static void report_failure(const char *what, int code) {
	fprintf(stderr, "failure: %s (%d)\n", what, code); // LINE:report_failure
	dw_static_table[code & 15]++;
}

__attribute__((noinline)) static int checked_div(int a, int b) {
	if (__builtin_expect(b == 0, 0)) {
		report_failure("division by zero", a); // LINE:checked_div_cold
		fprintf(stderr, "a=%d\n", a);
		return -1;
	}
	return a / b;
}

// Called with a constant argument only: GCC makes a .constprop clone at -O2.
__attribute__((noinline)) static int scale(int v, int factor) {
	int s = 0;
	for (int i = 0; i < factor; i++) // LINE:scale_loop
		s += add_squares(v, i);
	return s;
}

struct big { int a[8]; char name[32]; };

// Takes a struct by pointer but uses one field: GCC makes an .isra clone.
__attribute__((noinline)) static int first_field(struct big *b) {
	return b->a[0] * 3; // LINE:first_field
}

int main(int argc, char **argv) {
	struct big b;
	memset(&b, 0, sizeof b);
	b.a[0] = argc;
	int r = scale(argc, 5);                    // LINE:main_scale
	r += checked_div(r, argc - 1);             // LINE:main_div
	r += first_field(&b);
	r += add_squares(argc, r & 3);             // LINE:main_add
	dw_global_counter += r;
	printf("%d %d\n", r, dw_static_table[1]);
	if (argc > 5)
		abort();
	return 0;
}
