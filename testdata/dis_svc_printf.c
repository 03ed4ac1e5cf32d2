/* dis_svc_printf: C printf's own output for the formats the DPrintf test
 * (tcf/services/dprintf_test.go, printfCases) formats in the agent; one
 * case per line, in the same order as the Go table. */
#include <stdio.h>

int main(void) {
	printf("%d|%i|%5d|%-5d|%05d|%+d|% d\n", 42, -7, 42, 42, -42, 5, 5);
	printf("%u|%x|%X|%#x|%o|%#o|%08.3x\n", -1, 255, 255, 255, 8, 8, 10);
	printf("%hhd|%hd|%ld|%lld|%lu|%zx\n", 300, 70000, -5L, 1LL << 40, -1L, (size_t)4096);
	printf("%c|%s|%.2s|%8s|%-8s|%%\n", 'A', "abc", "abcdef", "hi", "hi");
	printf("%f|%.2f|%e|%E|%10.3f|%-10.1e|%+f\n", 3.14, 2.71828, 12345.678, 0.000123, -1.5, 1e10, 1.0);
	printf("%g|%g|%g|%g|%g|%G|%#g|%.3g\n", 3.14, 0.0001, 0.00001, 123456.0, 1234567.0, 1e-10, 1.5, 3.14159);
	printf("%g|%g|%.0f|%.0e|%05.1f\n", 0.0, 100.0, 2.5, 15.0, -2.5);
	printf("%p|%*d|%-*d|%.*f\n", (void *)0x1234, 6, 42, 4, 7, 1, 9.87);
	return 0;
}
