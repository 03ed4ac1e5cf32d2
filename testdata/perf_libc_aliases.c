// perf_libc_aliases: spends its time in libc functions that have several
// symbols at one address (recv: recv, __recv, __libc_recv, __GI___recv;
// read, write, send, poll, getpid...), for comparing the ELF symbol each
// sampled pc is named by with perf's. Usage: perf_libc_aliases SECONDS
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b) {
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 1;
	int sv[2], pp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe(pp) != 0)
		return 1;
	char buf[256], *words[64];
	static char store[64][16];
	for (int i = 0; i < 64; i++) {
		snprintf(store[i], sizeof store[i], "w%08x", (unsigned)(i * 2654435761u));
		words[i] = store[i];
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long n = 0;
	do {
		for (int i = 0; i < 200; i++) {
			send(sv[0], "ping", 4, 0);
			recv(sv[1], buf, sizeof buf, 0);
			write(pp[1], "x", 1);
			read(pp[0], buf, 1);
			struct pollfd p = {.fd = sv[1], .events = POLLIN};
			poll(&p, 1, 0);
			n += getpid() & 1;
			n += strlen(words[i & 63]);
			qsort(words, 64, sizeof words[0], cmp);
			n += strtod("3.25e2", NULL) > 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	printf("%lu\n", n);
	return 0;
}
