/* split4_ranges_b: the first unit of split4_ranges_a's program, with range
 * lists of its own (work_b's cold part), which put the next unit's
 * DW_AT_GNU_ranges_base past them. */
#include <stdio.h>

__attribute__((cold, noinline)) void report_b(int i) {
	printf("rare b %d\n", i);
}

__attribute__((noinline)) int work_b(int n) {
	int s = 0;
	for (int i = 0; i < n; i++) {
		if (i == 7654321) {
			report_b(i);
			s -= 5;
		}
		s += i * 5;
	}
	return s;
}
