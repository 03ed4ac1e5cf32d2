/* Test program for `sonde stack` (cmd/sonde): work that must come out right
 * however often a debugger stops and releases the process. Two threads
 * compute a checksum in a tight loop (stopped at arbitrary instructions), a
 * third sleeps in short nanosleeps and reads a pipe (stopped inside system
 * calls, which must restart), main waits in pthread_join. Prints "ready",
 * then the results; exits 0 only if every check holds. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 200000000u

static int pipefd[2];

static void *spin(void *arg) {
	uint64_t x = (uintptr_t)arg;
	for (unsigned i = 0; i < ROUNDS; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	return (void *)(uintptr_t)x;
}

static void *sleeper(void *arg) {
	(void)arg;
	struct timespec ts = {0, 2000000};
	int slept = 0;
	for (int i = 0; i < 200; i++)
		if (nanosleep(&ts, NULL) == 0)
			slept++;
	char c = 0;
	if (read(pipefd[0], &c, 1) != 1 || c != 'x')
		slept = -1;
	return (void *)(intptr_t)slept;
}

int main(void) {
	if (pipe(pipefd) != 0)
		return 2;
	pthread_t a, b, s;
	pthread_create(&a, NULL, spin, (void *)1);
	pthread_create(&b, NULL, spin, (void *)2);
	pthread_create(&s, NULL, sleeper, NULL);
	printf("ready\n");
	fflush(stdout);
	void *ra, *rb, *rs;
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	if (write(pipefd[1], "x", 1) != 1)
		return 3;
	pthread_join(s, &rs);
	/* The same computation, undisturbed, in this thread. */
	uint64_t wa = (uintptr_t)spin((void *)1), wb = (uintptr_t)spin((void *)2);
	int ok = (uintptr_t)ra == wa && (uintptr_t)rb == wb && (intptr_t)rs == 200;
	printf("%s %llx %llx %ld\n", ok ? "ok" : "BAD", (unsigned long long)(uintptr_t)ra, (unsigned long long)(uintptr_t)rb, (long)(intptr_t)rs);
	return ok ? 0 : 1;
}
