// core_target: a process for target/core's tests to dump, by the kernel or by
// gdb's gcore, while every thread sits blocked in a system call (so its memory
// cannot change between the test's snapshot and the dump).
//
// usage: core_target [MiB]
//   Allocates and touches MiB mebibytes (0 by default) so the core is big, fills
//   data, bss, heap and each worker's stack with patterns, loads a pattern
//   into each worker's ymm8 register, then prints one line:
//     READY pid=P tids=T1,T2,T3 heap=0x.. data=0x.. bss=0x.. big=0x..
//   and blocks reading stdin. A line "fault N" on stdin makes worker N write
//   through a bad pointer (a real SIGSEGV, si_code SEGV_MAPERR), "abort N"
//   makes it call abort(3); anything else (or EOF) makes the program exit 0.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NWORKERS 3

int data_words[2048] = {1, 2, 3, 5, 8, 13, 21, 34};  // .data
unsigned char bss_bytes[1 << 16];                     // .bss

static pthread_barrier_t ready;
static int wake[NWORKERS][2];  // one pipe per worker
static pid_t tids[NWORKERS];

// block_with_pattern loads 32 pattern bytes into ymm8 and blocks in read(2)
// issued straight from the same asm, so no compiled code can disturb ymm8.
static long block_with_pattern(int fd, const unsigned char pattern[32], char *buf) {
	long ret;
	__asm__ volatile(
	    "vmovdqu (%[pat]), %%ymm8\n\t"
	    "syscall\n\t"
	    : "=a"(ret)
	    : "a"((long)SYS_read), "D"((long)fd), "S"(buf), "d"(1L), [pat] "r"(pattern)
	    : "rcx", "r11", "memory", "xmm8");
	return ret;
}

static void *worker(void *arg) {
	int k = (int)(intptr_t)arg;
	volatile unsigned char frame[8192];
	for (int i = 0; i < (int)sizeof frame; i++)
		frame[i] = (unsigned char)(i * 7 + k);
	unsigned char pattern[32];
	for (int i = 0; i < 32; i++)
		pattern[i] = (unsigned char)(0x10 * (k + 1) + i);
	tids[k] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&ready);
	char c;
	if (block_with_pattern(wake[k][0], pattern, &c) == 1) {
		if (c == 'f')
			*(volatile int *)(uintptr_t)0x18 = frame[5];  // the fault
		if (c == 'a')
			abort();
	}
	return NULL;
}

int main(int argc, char **argv) {
	// Let gdb (a sibling, not an ancestor) attach under Yama's ptrace_scope 1.
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	size_t big_mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	unsigned char *big = NULL;
	if (big_mib) {
		big = malloc(big_mib << 20);
		for (size_t i = 0; i < big_mib << 20; i += 4096)
			big[i] = (unsigned char)(i >> 12);
	}
	uint32_t x = 12345;
	unsigned char *heap = malloc(96 << 10);  // under the mmap threshold: in [heap]
	for (size_t i = 0; i < 96 << 10; i++) {
		x = x * 1103515245u + 12345u;
		heap[i] = (unsigned char)(x >> 16);
	}
	for (size_t i = 0; i < sizeof bss_bytes; i++)
		bss_bytes[i] = (unsigned char)(i ^ 0x5a);
	for (int i = 8; i < 2048; i++)
		data_words[i] = data_words[i - 1] * 31 + i;

	pthread_barrier_init(&ready, NULL, NWORKERS + 1);
	pthread_t th[NWORKERS];
	for (int k = 0; k < NWORKERS; k++) {
		if (pipe(wake[k]) != 0)
			return 2;
		pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k);
	}
	pthread_barrier_wait(&ready);
	printf("READY pid=%d tids=%d,%d,%d heap=%p data=%p bss=%p big=%p\n", getpid(), tids[0], tids[1],
	       tids[2], (void *)heap, (void *)data_words, (void *)bss_bytes, (void *)big);
	fflush(stdout);

	char line[64];
	if (fgets(line, sizeof line, stdin) &&
	    (strncmp(line, "fault ", 6) == 0 || strncmp(line, "abort ", 6) == 0)) {
		int k = atoi(line + 6) % NWORKERS;
		if (write(wake[k][1], line, 1) != 1)
			return 3;
		pthread_join(th[k], NULL);  // never returns: the fault kills the process
	}
	return 0;
}
