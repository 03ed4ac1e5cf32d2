/* stk_crash: dies of SIGSEGV (a read at address 4) in a worker thread, three
 * calls deep, while the main thread waits in pthread_join: the core for the
 * tests of cores with a moved, rebuilt or sysroot'ed executable and
 * libraries. Built at -O1, the faulting instruction is inside a line (a
 * line-table row that is not a statement), where gdb prints frame 0's
 * address. REBUILT changes the code, so a rebuild has another build-id. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

struct rec {
	int a[6];
	int b;
};

struct rec *volatile crash_ptr;

__attribute__((noinline)) int deref(struct rec *p, int d)
{
	return p->a[d] + p->b;
}

__attribute__((noinline)) int level(int n, struct rec *p)
{
	if (n == 0)
		return deref(p, 1);
	return level(n - 1, p) + 1;
}

static void *worker(void *arg)
{
	(void)arg;
	usleep(200000); /* let main reach pthread_join */
#ifdef REBUILT
	printf("rebuilt\n");
#endif
	printf("%d\n", level(3, crash_ptr));
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	return 0;
}
