/* JIT-like code for the unwinder: a function copied into anonymous
   executable memory that keeps a frame pointer, fills its frame with words
   that look like addresses, and either calls back into C or blocks in a
   pause system call of its own. The main thread blocks inside the JIT code;
   a second thread blocks in libc's pause called from C called from JIT code.
   Writes /tmp/perf-PID.map naming the code, as Node's --perf-basic-prof does.
   Usage: uw_jit [nomap] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef void (*callback)(long);
typedef void (*jitfn)(long, callback);

static const unsigned char code[] = {
	0x55,                                     /* push %rbp */
	0x48, 0x89, 0xe5,                         /* mov %rsp,%rbp */
	0x48, 0x83, 0xec, 0x10,                   /* sub $16,%rsp */
	0x48, 0xb8, 0, 0, 0, 0, 3, 0, 0, 0,       /* movabs $0x300000000,%rax */
	0x48, 0x89, 0x04, 0x24,                   /* mov %rax,(%rsp) */
	0x48, 0xc7, 0x44, 0x24, 0x08, 2, 0, 0, 0, /* movq $2,8(%rsp) */
	0x48, 0x85, 0xff,                         /* test %rdi,%rdi */
	0x74, 0x04,                               /* je pause */
	0xff, 0xd6,                               /* call *%rsi: cb(n) */
	0xc9,                                     /* leave */
	0xc3,                                     /* ret */
	0xb8, 34, 0, 0, 0,                        /* pause: mov $34,%eax (pause) */
	0x0f, 0x05,                               /* syscall */
	0xc9,                                     /* leave */
	0xc3,                                     /* ret */
};

static jitfn jit;

/* Calls the JIT code with n-1; at 0 the JIT code itself blocks. */
__attribute__((noinline)) void back_into_c(long n)
{
	jit(n - 1, back_into_c);
	__asm__ volatile("" ::: "memory");
}

/* Blocks in libc when the JIT code calls it with 1. */
__attribute__((noinline)) void block_in_libc(long n)
{
	if (n <= 1)
		pause();
	else
		jit(n - 1, block_in_libc);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void *worker(void *arg)
{
	(void)arg;
	jit(3, block_in_libc);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem + 64, code, sizeof code);
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC) != 0)
		return 1;
	jit = (jitfn)(mem + 64);
	if (argc < 2 || strcmp(argv[1], "nomap") != 0) {
		char path[64];
		snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
		FILE *f = fopen(path, "w");
		if (f == NULL)
			return 1;
		fprintf(f, "%lx %zx jit_trampoline\n", (unsigned long)jit, sizeof code);
		fclose(f);
	}
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	printf("ready\n");
	fflush(stdout);
	jit(3, back_into_c);
	return 0;
}
