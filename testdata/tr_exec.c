/* tr_exec: calls hot() N times, then replaces itself with another program
 * (bash's `exec PROG`, a wrapper script's last command).
 *
 *   tr_exec N PROG ARGS...   prints the sum, then execv(PROG, ARGS). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) long hot(long x) { return x * 3 + 1; }

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000, s = 0;
	for (long i = 0; i < n; i++)
		s += hot(i);
	printf("%ld\n", s);
	fflush(stdout);
	if (argc > 2)
		execv(argv[2], argv + 2);
	return 0;
}
