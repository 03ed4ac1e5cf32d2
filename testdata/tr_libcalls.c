/* tr_libcalls: calls libc's getpid (a plain function, of which the dynamic
 * linker has a private copy too) and strlen (an indirect function: its
 * symbol is a resolver, the code called is the implementation it chose)
 * N times, for `sonde trace --probe getpid --probe strlen`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000, s = 0;
	char buf[32];
	for (long i = 0; i < n; i++) {
		snprintf(buf, sizeof buf, "%ld", i); /* not hoisted: a new string */
		s += getpid() != 0;
		s += strlen(buf);
	}
	printf("%ld\n", s);
	return 0;
}
