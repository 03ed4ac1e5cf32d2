/* ld_storm: the debuggee of the agent's load and fault test
 * (tcf/services/live_load_test.go). argv[1] picks what it does:
 *
 *   threads N   start N threads (small stacks) that block in pause(), print
 *               "ready N" once all run, and pause forever
 *   forks N     fork N children at once; each calls work() and exits 7; exit
 *               0 when every child exited 7, else 1
 *   execs N     the same, each child execing this program as "exit7"
 *   exit7       call work(), exit 7
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int storm_work;

__attribute__((noinline)) void work(void) { storm_work++; }

static pthread_barrier_t started;

static void *blocked(void *arg) {
	(void)arg;
	pthread_barrier_wait(&started);
	for (;;)
		pause();
	return NULL;
}

static int threads(int n) {
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_barrier_init(&started, NULL, n + 1);
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, blocked, NULL) != 0) {
			fprintf(stderr, "thread %d: cannot create\n", i);
			return 1;
		}
	}
	pthread_barrier_wait(&started);
	printf("ready %d\n", n);
	fflush(stdout);
	for (;;)
		pause();
}

static int storm(int n, const char *self, int exec) {
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			if (exec) {
				execl(self, self, "exit7", (char *)NULL);
				_exit(8);
			}
			work();
			_exit(7);
		}
	}
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
			bad++;
	}
	printf("children %d bad %d\n", n, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;
	if (strcmp(mode, "threads") == 0)
		return threads(n);
	if (strcmp(mode, "forks") == 0)
		return storm(n, argv[0], 0);
	if (strcmp(mode, "execs") == 0)
		return storm(n, argv[0], 1);
	if (strcmp(mode, "exit7") == 0) {
		work();
		return 7;
	}
	fprintf(stderr, "usage: ld_storm threads|forks|execs N | exit7\n");
	return 2;
}
