// Thread-local storage of a library loaded into a new link-map namespace
// with dlmopen (argv[1], tls_dl.so): the dynamic linker chains namespaces
// from r_debug (r_debug_extended). Two threads set their copies and print
// their addresses to the file argv[2]; sonde finds the same addresses.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static long *(*dl_addr)(void);
static void (*dl_set)(int);
static pthread_barrier_t ready, never;
static FILE *report;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
volatile int sink;

__attribute__((noinline)) void stop_here(void) { sink++; }

static void set_and_report(int k)
{
	dl_set(k);
	long *p = dl_addr();
	pthread_mutex_lock(&mu);
	fprintf(report, "thread %ld dl_tls %ld %p\n", (long)gettid(), *p, (void *)p);
	fflush(report);
	pthread_mutex_unlock(&mu);
}

static void *worker(void *arg)
{
	set_and_report((int)(long)arg);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&never);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3 || !(report = fopen(argv[2], "w")))
		return 2;
	void *h = dlmopen(LM_ID_NEWLM, argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	dl_addr = (long *(*)(void))dlsym(h, "dl_tls_addr");
	dl_set = (void (*)(int))dlsym(h, "dl_set");
	pthread_barrier_init(&ready, NULL, 2);
	pthread_barrier_init(&never, NULL, 3);
	pthread_t th;
	pthread_create(&th, NULL, worker, (void *)1);
	set_and_report(2);
	pthread_barrier_wait(&ready);
	stop_here();
	if (argc > 3)
		for (;;)
			pause();
	return 0;
}
