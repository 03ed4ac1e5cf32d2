/* tr_sigloop: a hot function called in a loop while an interval timer
 * delivers SIGALRM to a handler every 200 µs (python3's signal module,
 * profilers' SIGPROF): signals arrive while a thread runs a probe's
 * trampoline, and again while sonde steps it out of there.
 *
 *   tr_sigloop N    calls hot() N times; prints the sum and whether the
 *                   handler ran (the same traced and untraced). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static volatile long nsig;

static void handler(int sig) {
	(void)sig;
	nsig++;
}

__attribute__((noinline)) long hot(long x) { return x * 3 + 1; }

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000, s = 0;
	signal(SIGALRM, handler);
	struct itimerval it = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &it, 0);
	for (long i = 0; i < n; i++)
		s += hot(i);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, 0);
	printf("%ld %d\n", s, nsig > 0);
	return 0;
}
