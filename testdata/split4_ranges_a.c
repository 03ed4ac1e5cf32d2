/* split4_ranges_a: the second unit of a split DWARF 4 build (after
 * split4_ranges_b.c), so its skeleton's DW_AT_GNU_ranges_base is not 0;
 * its code is in several ranges (work_a's hot part in .text, its cold part
 * in .text.unlikely, main in .text.startup), so the skeleton has
 * DW_AT_ranges. */
#include <stdio.h>

int work_b(int);

__attribute__((cold, noinline)) void report(int i) {
	printf("rare %d\n", i);
}

static inline int scale(int i) {
	return i * 3;
}

__attribute__((noinline)) int work_a(int n) {
	int s = 0;
	for (int i = 0; i < n; i++) {
		if (i == 1234567) {
			report(i);
			s -= 11;
		}
		s += scale(i);
	}
	return s;
}

int main(int argc, char **argv) {
	(void)argv;
	return work_a(argc) + work_b(argc);
}
