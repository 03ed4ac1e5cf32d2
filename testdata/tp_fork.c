/* tp_fork: process creation for follow-fork and exec tests.
 *
 *   tp_fork fork    forks; the child calls child_work() and exits 7; the parent
 *                   waits and exits with 10 + the child's exit code
 *   tp_fork vfork   vforks; the child execs "tp_fork exit5"; parent exits 20 + code
 *   tp_fork vforkwork  like vfork, but the child calls child_work() before its exec
 *   tp_fork exec    execs itself as "tp_fork exit5"
 *   tp_fork exit5   calls child_work() and exits 5
 *   tp_fork clone   starts a thread that calls child_work(); exits 3 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int work_done;

__attribute__((noinline)) void child_work(void) {
	work_done++;
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg) {
	(void)arg;
	child_work();
	return NULL;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "fork";
	int st = 0;
	if (strcmp(mode, "fork") == 0) {
		pid_t c = fork();
		if (c == 0) {
			child_work();
			_exit(7);
		}
		waitpid(c, &st, 0);
		return 10 + WEXITSTATUS(st);
	}
	if (strcmp(mode, "vfork") == 0 || strcmp(mode, "vforkwork") == 0) {
		int work = mode[5] == 'w';
		pid_t c = vfork();
		if (c == 0) {
			if (work)
				child_work();
			execl("/proc/self/exe", argv[0], "exit5", (char *)NULL);
			_exit(99);
		}
		waitpid(c, &st, 0);
		return 20 + WEXITSTATUS(st);
	}
	if (strcmp(mode, "exec") == 0) {
		execl("/proc/self/exe", argv[0], "exit5", (char *)NULL);
		return 99;
	}
	if (strcmp(mode, "exit5") == 0) {
		child_work();
		return 5;
	}
	if (strcmp(mode, "clone") == 0) {
		pthread_t t;
		pthread_create(&t, NULL, thread_main, NULL);
		pthread_join(t, NULL);
		return 3;
	}
	return 2;
}
