/* vforks in a loop for MILLISECONDS (default 300): the parent spends its
 * time in the vfork system call, where glibc's __vfork has popped its
 * return address into a register (CFA = sp). Recorded by profiling's tests. */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spawn(void) {
	pid_t p = vfork();
	if (p == 0)
		_exit(0);
	if (p > 0)
		waitpid(p, NULL, 0);
}

int main(int argc, char **argv) {
	double end = now() + (argc > 1 ? atof(argv[1]) : 300) / 1000;
	while (now() < end)
		spawn();
	return 0;
}
