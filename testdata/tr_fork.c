/* tr_fork: a program that forks a child running the same code, as bash's
 * subshells, nginx's workers and python's multiprocessing do.
 *
 *   tr_fork N    calls hot() N times, forks; the child calls hot() N times
 *                and prints its sum and the first 5 bytes of hot() as it
 *                sees them; the parent waits and prints its sum and the
 *                child's exit status. Untraced and traced alike: the child
 *                of a traced process runs the application's code, not a
 *                jump into a trampoline whose counter nobody reads. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) long hot(long x) { return x * 3 + 1; }

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000, s = 0;
	for (long i = 0; i < n; i++)
		s += hot(i);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		long t = 0;
		for (long i = 0; i < n; i++)
			t += hot(i);
		const volatile unsigned char *p = (const volatile unsigned char *)(void *)hot;
		printf("child: %ld, hot begins %02x %02x %02x %02x %02x\n", t, p[0], p[1], p[2], p[3], p[4]);
		fflush(stdout);
		_exit(0);
	}
	int st = 0;
	waitpid(c, &st, 0);
	printf("parent: %ld, child exit %d\n", s, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
	return 0;
}
