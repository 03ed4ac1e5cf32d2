/* stk_trial3: the states in which issue 21's third trial on real programs
 * found sonde's backtraces differing from gdb's, each in a few lines.
 *
 *   label   blocked in a read whose syscall returns to a global zero-size
 *           label inside a sized assembly function (qemu-user's
 *           safe_syscall_base / safe_syscall_end);
 *   bss     blocked in pthread_cond_wait on a condition variable in .bss
 *           past the file's last page, where the executable's mapping ends
 *           and anonymous memory holds the rest of .bss (mariadbd's
 *           COND_manager: gdb prints <COND_manager>);
 *   lowmap  blocked in read with an ELF file mapped below the executable
 *           (qemu-user maps its guest program under itself), so that the
 *           executable is not the lowest file in the memory map;
 *   utf8    blocked in read under a function given non-ASCII strings;
 *   vfork   the parent blocked in vfork until its child, which reads,
 *           execs or exits (posix_spawn's clone(CLONE_VFORK) too).
 *
 * Prints "ready" when the state is reached. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* long trial_read(int fd, void *buf, unsigned long n): read(2) with the
 * label trial_read_end at the instruction after the syscall. */
__asm__(".text\n"
        ".globl trial_read\n"
        ".type trial_read, @function\n"
        "trial_read:\n"
        ".cfi_startproc\n"
        "  xor %eax, %eax\n"
        "  syscall\n"
        ".globl trial_read_end\n"
        "trial_read_end:\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size trial_read, .-trial_read\n");
long trial_read(int fd, void *buf, unsigned long n);

static int pipefd[2];

static void ready(void) {
	puts("ready");
	fflush(stdout);
}

__attribute__((noinline)) static long in_label(int depth) {
	char c;
	if (depth == 0) {
		ready();
		return trial_read(pipefd[0], &c, 1);
	}
	return in_label(depth - 1) + 1;
}

/* The condition variable waited on, after many pages of .bss. */
struct {
	char pad[1 << 20];
	pthread_cond_t cond;
} trial_bss;
pthread_mutex_t trial_mutex = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void wait_on(pthread_mutex_t *m, pthread_cond_t *c) {
	pthread_mutex_lock(m);
	ready();
	pthread_cond_wait(c, m);
	pthread_mutex_unlock(m);
}

__attribute__((noinline)) static long blocked_read(int depth) {
	char c;
	if (depth == 0) {
		ready();
		return read(pipefd[0], &c, 1);
	}
	return blocked_read(depth - 1) + 1;
}

static int lowmap(const char *file) {
	int fd = open(file, O_RDONLY);
	if (fd < 0)
		return 1;
	/* An ELF file's first page, mapped as a loader would, at 2 MiB: below
	 * any PIE executable's load address. */
	void *p = mmap((void *)0x200000, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	return (int)blocked_read(2);
}

__attribute__((noinline)) static int in_vfork(int depth) {
	if (depth == 0) {
		pid_t p = vfork();
		if (p == 0) {
			char c;
			ready();
			_exit((int)read(pipefd[0], &c, 1));
		}
		return p > 0;
	}
	return in_vfork(depth - 1) + 1;
}

/* Strings gdb prints by its host charset (sqlite3's fgets buffer): UTF-8
 * text, bytes that are no character with a sequence cut short at the end,
 * a repeated multibyte character, a non-printable one (U+0080). */
char utf8_text[] = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93";
char utf8_bad[] = "\300\214\371\321";
char utf8_rep[] = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9x";
char utf8_ctl[] = "a\xc2\x80" "b";

__attribute__((noinline)) static long show(const char *text, const char *bad, const char *rep, const char *ctl) {
	char c;
	ready();
	return read(pipefd[0], &c, 1) + text[0] + bad[0] + rep[0] + ctl[0];
}

int main(int argc, char **argv) {
	if (pipe(pipefd) != 0)
		return 1;
	if (argc > 1 && strcmp(argv[1], "label") == 0)
		return (int)in_label(2);
	if (argc > 1 && strcmp(argv[1], "bss") == 0) {
		wait_on(&trial_mutex, &trial_bss.cond);
		return 0;
	}
	if (argc > 2 && strcmp(argv[1], "lowmap") == 0)
		return lowmap(argv[2]);
	if (argc > 1 && strcmp(argv[1], "vfork") == 0)
		return in_vfork(2);
	if (argc > 1 && strcmp(argv[1], "utf8") == 0)
		return (int)show(utf8_text, utf8_bad, utf8_rep, utf8_ctl);
	fprintf(stderr, "usage: stk_trial3 label|bss|lowmap FILE|vfork|utf8\n");
	return 2;
}
