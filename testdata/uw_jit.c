/* JIT-like code for the unwinder: a function copied into anonymous
   executable memory that keeps a frame pointer, fills its frame with words
   that look like addresses, and either calls back into C or blocks in a
   pause system call of its own. The main thread blocks inside the JIT code;
   a second thread blocks in libc's pause called from C called from JIT code.
   Names the code in /tmp/perf-PID.map, as Node's --perf-basic-prof does, or
   in a jitdump file $TMPDIR/jit-PID.dump that it maps executable, as perf's
   jitdump convention (and node --perf-prof) does.
   Usage: uw_jit [map|nomap|jitdump] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
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

/* Writes a jitdump file with one code-load record for the JIT code and
   maps it, as runtimes do so that perf record notices the file. */
static int write_jitdump(const char *name)
{
	char path[256];
	const char *dir = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/jit-%d.dump", dir && *dir ? dir : "/tmp", getpid());
	FILE *f = fopen(path, "w+");
	if (f == NULL)
		return -1;
	struct {
		uint32_t magic, version, total_size, elf_mach, pad1, pid;
		uint64_t timestamp, flags;
	} hdr = {0x4A695444, 1, sizeof hdr, 62, 0, (uint32_t)getpid(), 0, 0};
	struct {
		uint32_t id, total_size;
		uint64_t timestamp;
		uint32_t pid, tid;
		uint64_t vma, code_addr, code_size, code_index;
	} rec = {0, 0, 0, (uint32_t)getpid(), (uint32_t)getpid(), (uint64_t)(uintptr_t)jit,
		 (uint64_t)(uintptr_t)jit, sizeof code, 1};
	rec.total_size = sizeof rec + strlen(name) + 1 + sizeof code;
	fwrite(&hdr, sizeof hdr, 1, f);
	fwrite(&rec, sizeof rec, 1, f);
	fwrite(name, strlen(name) + 1, 1, f);
	fwrite(code, sizeof code, 1, f);
	fflush(f);
	void *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0);
	return m == MAP_FAILED ? -1 : 0;
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
	const char *mode = argc > 1 ? argv[1] : "map";
	if (strcmp(mode, "jitdump") == 0) {
		if (write_jitdump("jit_trampoline_dump") != 0)
			return 1;
	} else if (strcmp(mode, "nomap") != 0) {
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
