/* tp_dstep: displaced-stepping cases. Every case is a small assembly function
 * with a global label on the instruction a test plants a breakpoint on, so
 * the instruction is exactly the one named (the compiler cannot change it).
 *
 *   tp_dstep loop N       runs every case N times and prints a checksum: the
 *                         same with and without breakpoints on the cases.
 *   tp_dstep threads N    8 threads call ds_riprel N times each while a 9th
 *                         (named "nine") spins on code with no breakpoint;
 *                         prints a checksum when all are done.
 *   tp_dstep fault        a SIGSEGV handler checks that the faulting load's
 *                         pc is faulty_load; exits 0 if so, 3 if not.
 *   tp_dstep spin         loops forever on the cases (asynchronous stops). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

long ds_var = 5;
long (*ds_fnptr)(long);
unsigned char ds_src[64], ds_dst[64];

long ds_riprel(long), ds_call(long), ds_jcc(long), ds_pushpop(long), ds_icall(long),
	ds_retfn(long), ds_rep(long), ds_callee(long);
long faulty_load(long *);

__asm__(
	".text\n"
	/* rip-relative load: mov ds_var(%rip),%rax */
	".globl ds_riprel\n.type ds_riprel,@function\n"
	"ds_riprel:\n"
	"	mov ds_var(%rip), %rax\n"
	"	add %rdi, %rax\n"
	"	ret\n"
	/* call rel32 */
	".globl ds_call\n.type ds_call,@function\n"
	"ds_call:\n"
	"	call ds_callee\n"
	"	add $1, %rax\n"
	"	ret\n"
	".globl ds_callee\n.type ds_callee,@function\n"
	"ds_callee:\n"
	"	lea 3(%rdi,%rdi), %rax\n"
	"	ret\n"
	/* jcc rel8, taken for rdi < 10 */
	".globl ds_jcc\n.globl ds_jcc_br\n.type ds_jcc,@function\n"
	"ds_jcc:\n"
	"	cmp $10, %rdi\n"
	"ds_jcc_br:\n"
	"	jl 1f\n"
	"	mov $100, %rax\n"
	"	ret\n"
	"1:	mov $200, %rax\n"
	"	ret\n"
	/* push and pop with rsp-relative memory operands */
	".globl ds_pushpop\n.globl ds_push_mem\n.globl ds_pop_mem\n.type ds_pushpop,@function\n"
	"ds_pushpop:\n"
	"	push %rdi\n"
	"	sub $8, %rsp\n"
	"ds_push_mem:\n"
	"	pushq 8(%rsp)\n"
	"ds_pop_mem:\n"
	"	popq (%rsp)\n"
	"	mov (%rsp), %rax\n"
	"	add $16, %rsp\n"
	"	ret\n"
	/* call through a rip-relative pointer */
	".globl ds_icall\n.globl ds_icall_insn\n.type ds_icall,@function\n"
	"ds_icall:\n"
	"	sub $8, %rsp\n"
	"ds_icall_insn:\n"
	"	call *ds_fnptr(%rip)\n"
	"	add $8, %rsp\n"
	"	ret\n"
	/* a breakpoint on ret */
	".globl ds_retfn\n.globl ds_ret_insn\n.type ds_retfn,@function\n"
	"ds_retfn:\n"
	"	lea 7(%rdi), %rax\n"
	"ds_ret_insn:\n"
	"	ret\n"
	/* rep movsb of rdi bytes, returns the last byte copied */
	".globl ds_rep\n.globl ds_rep_insn\n.type ds_rep,@function\n"
	"ds_rep:\n"
	"	mov %rdi, %rcx\n"
	"	lea ds_src(%rip), %rsi\n"
	"	lea ds_dst(%rip), %rdi\n"
	"ds_rep_insn:\n"
	"	rep movsb\n"
	"	movzbl -1(%rdi), %eax\n"
	"	ret\n"
	/* a load that faults when given a bad pointer (with CFI: backtraces
	 * from its fault are compared) */
	".globl faulty_load\n.type faulty_load,@function\n"
	"faulty_load:\n"
	"	.cfi_startproc\n"
	"	mov (%rdi), %rax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size faulty_load, .-faulty_load\n");

static long one_round(long i) {
	long acc = 0;
	acc += ds_riprel(i);
	acc += ds_call(i) * 3;
	acc += ds_jcc(i % 20) * 5;
	acc += ds_pushpop(i) * 7;
	acc += ds_icall(i) * 11;
	acc += ds_retfn(i) * 13;
	if (i % 64 == 0)
		acc += ds_rep(1 + i % 5) * 17;
	return acc;
}

static long per_thread;
static volatile int nine_stop;
static volatile unsigned long nine_count;

static void *hammer(void *arg) {
	long *out = arg;
	long acc = 0;
	for (long i = 0; i < per_thread; i++)
		acc += ds_riprel(i);
	*out = acc;
	return NULL;
}

static void *nine(void *arg) {
	(void)arg;
	pthread_setname_np(pthread_self(), "nine");
	while (!nine_stop)
		nine_count++;
	return NULL;
}

static volatile long usr1_count;
static void on_usr1(int sig) {
	(void)sig;
	usr1_count++;
}

static void on_segv(int sig, siginfo_t *si, void *uc_) {
	(void)sig;
	(void)si;
	ucontext_t *uc = uc_;
	long rip = uc->uc_mcontext.gregs[REG_RIP];
	if (rip != (long)faulty_load)
		_exit(3);
	uc->uc_mcontext.gregs[REG_RIP] = rip + 3; /* skip mov (%rdi),%rax */
	uc->uc_mcontext.gregs[REG_RAX] = 77;
}

int main(int argc, char **argv) {
	ds_fnptr = ds_callee;
	for (int i = 0; i < 64; i++)
		ds_src[i] = (unsigned char)(i * 7 + 1);
	const char *mode = argc > 1 ? argv[1] : "loop";
	long n = argc > 2 ? atol(argv[2]) : 1000;
	if (strcmp(mode, "loop") == 0 || strcmp(mode, "spin") == 0) {
		signal(SIGUSR1, on_usr1);
		long acc = 0;
		for (long i = 0; strcmp(mode, "spin") == 0 || i < n; i++)
			acc += one_round(i);
		printf("%ld\n", acc);
		return 0;
	}
	if (strcmp(mode, "threads") == 0) {
		per_thread = n;
		pthread_t t[8], t9;
		long out[8];
		pthread_create(&t9, NULL, nine, NULL);
		for (int i = 0; i < 8; i++)
			pthread_create(&t[i], NULL, hammer, &out[i]);
		long acc = 0;
		for (int i = 0; i < 8; i++) {
			pthread_join(t[i], NULL);
			acc += out[i];
		}
		nine_stop = 1;
		pthread_join(t9, NULL);
		printf("%ld %s\n", acc, nine_count > 0 ? "nine-ran" : "nine-idle");
		return 0;
	}
	if (strcmp(mode, "fault") == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		long *volatile bad = NULL;
		long r = faulty_load(bad);
		printf("%ld\n", r);
		return r == 77 ? 0 : 4;
	}
	return 2;
}
