/* agent_prog: the debuggee of the live TCF agent tests (tcf/services) and of
 * scripts/tcf-python-interop. argv[1] picks what it does:
 *
 *   (none)    print "start", compute(3), print "result N", exit 0
 *   echo      copy stdin to stdout line by line until EOF, exit 7
 *   env       print the environment, exit 0
 *   threads   start 4 busy threads and spin forever
 *   sleep     print "ready <addr of agent_global>" and sleep forever
 *   loop N    call hit() N times (breakpoint benchmark), exit 0
 *   big       fill agent_big with a pattern, then as sleep
 *   deep N    recurse N frames deep, then call bottom()
 *   deep N loop  the same, and bottom() calls hit() forever (stack benchmark)
 *   signal    raise SIGUSR1, print "counter N" (1000 if the handler ran), exit 3
 *   fork      fork a child that prints "child" and exits 5; print "parent", exit 0
 *   dlopen L  dlopen library L and call agent_lib_add, exit 0
 *   exec P    exec program P (no arguments); exit 8 if that fails
 *   crash     write through a null pointer
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

volatile unsigned long long agent_global = 0x1122334455667788ULL;
unsigned char agent_buf[64] = "sonde agent buffer";
volatile int agent_counter;
volatile int agent_deep_loop;
/* agent_big is 1 MiB of data for the Memory.get benchmark. */
unsigned char agent_big[1 << 20];

/* twice is inlined into both of its callers even at -O0, so a file:line
 * breakpoint on its body has two addresses. */
static inline __attribute__((always_inline)) int twice(int x) {
	int y = x * 2; /* AGENT_TWICE_LINE */
	return y;
}

__attribute__((noinline)) int add(int a, int b) {
	int s = a + b; /* AGENT_ADD_FIRST_LINE */
	agent_counter += s;
	return s;
}

__attribute__((noinline)) int compute(int n) {
	int total = 0;
	for (int i = 0; i < n; i++) {
		total += add(i, twice(i)); /* AGENT_CALL_LINE */
	}
	total += twice(total);
	return total;
}

__attribute__((noinline)) void hit(void) { agent_counter++; }

__attribute__((noinline)) void bottom(void) { agent_counter += 100; while (agent_deep_loop) hit(); }

__attribute__((noinline)) int deep(int n) {
	if (n <= 0) {
		bottom();
		return 0;
	}
	return deep(n - 1) + 1;
}

static void *spin(void *arg) {
	(void)arg;
	for (;;)
		agent_counter++;
	return 0;
}

static void on_usr1(int sig) { (void)sig; agent_counter += 1000; }

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "";
	printf("start\n");
	fflush(stdout);
	if (strcmp(mode, "echo") == 0) {
		char line[256];
		while (fgets(line, sizeof line, stdin)) {
			fputs(line, stdout);
			fflush(stdout);
		}
		return 7;
	}
	if (strcmp(mode, "env") == 0) {
		for (char **e = environ; *e; e++)
			printf("%s\n", *e);
		return 0;
	}
	if (strcmp(mode, "threads") == 0) {
		pthread_t t;
		for (int i = 0; i < 4; i++)
			pthread_create(&t, 0, spin, 0);
		spin(0);
	}
	if (strcmp(mode, "big") == 0) {
		for (unsigned i = 0; i < sizeof agent_big; i++)
			agent_big[i] = (unsigned char)(i * 7);
		mode = "sleep";
	}
	if (strcmp(mode, "sleep") == 0) {
		printf("ready %p\n", (void *)&agent_global);
		fflush(stdout);
		for (;;)
			sleep(100);
	}
	if (strcmp(mode, "loop") == 0 && argc > 2) {
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			hit();
		return 0;
	}
	if (strcmp(mode, "deep") == 0 && argc > 2) {
		agent_deep_loop = argc > 3;
		deep(atoi(argv[2]));
		return 0;
	}
	if (strcmp(mode, "signal") == 0) {
		signal(SIGUSR1, on_usr1);
		raise(SIGUSR1);
		printf("counter %d\n", agent_counter);
		return 3;
	}
	if (strcmp(mode, "fork") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			printf("child\n");
			return 5;
		}
		int st;
		waitpid(pid, &st, 0);
		printf("parent %d\n", WEXITSTATUS(st));
		return 0;
	}
	if (strcmp(mode, "exec") == 0 && argc > 2) {
		execl(argv[2], argv[2], (char *)NULL);
		return 8;
	}
	if (strcmp(mode, "dlopen") == 0 && argc > 2) {
		void *h = dlopen(argv[2], RTLD_NOW);
		if (!h)
			return 9;
		int (*f)(int, int) = (int (*)(int, int))dlsym(h, "agent_lib_add");
		printf("lib %d\n", f ? f(1, 2) : -1);
		return 0;
	}
	if (strcmp(mode, "crash") == 0) {
		*(volatile int *)0 = 1;
	}
	int r = compute(3);
	printf("result %d\n", r);
	return 0;
}
