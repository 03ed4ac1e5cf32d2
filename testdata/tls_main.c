#define _GNU_SOURCE
// Thread-local storage across modules: the executable's own __thread
// variables, those of a library linked at start (libtls_lib.so), of one
// loaded with dlopen (argv[1], dynamic TLS), of one loaded with dlopen
// whose variable is initial-exec (argv[2], static TLS), and glibc's errno.
// Four threads — one started before the libraries were loaded — give each
// a different value, print their values and addresses to the file argv[3],
// and wait while the main thread stops in stop_here: sonde reads every
// thread's copies and compares with gdb and with what was printed. With a
// fifth argument the program waits after stop_here, for attaching.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct tls_pair {
	int id;
	double weight;
};

extern __thread int lib_tls;
extern __thread struct tls_pair lib_pair;
long *lib_set(int k);

__thread int main_tls = 11;
static __thread double main_tls_d = 1.5;
__thread char main_buf[16] = "main";

#define WORKERS 3 // worker 3 starts before the dlopens

static long *(*dl_addr)(void);
static void (*dl_set)(int);
static int *(*ie_addr)(void);
static void (*ie_set)(int);
static pthread_barrier_t ready, never;
static FILE *report;
static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;

volatile int sink;

__attribute__((noinline)) void stop_here(void) { sink++; }

static void set_and_report(int k, int use_dl)
{
	main_tls = 11 + k;
	main_tls_d = 1.5 + k;
	main_buf[4] = (char)('0' + k);
	long *hidden = lib_set(k);
	errno = 100 + k;
	long *dl = 0;
	int *ie = 0;
	if (use_dl) {
		dl_set(k);
		dl = dl_addr();
		ie_set(k);
		ie = ie_addr();
	}
	pthread_mutex_lock(&report_mu);
	fprintf(report, "thread %ld main_tls %d %p main_tls_d %g %p lib_tls %d %p lib_pair.id %d %p lib_hidden %ld %p errno %d %p",
	        (long)gettid(), main_tls, (void *)&main_tls, main_tls_d, (void *)&main_tls_d, lib_tls, (void *)&lib_tls,
	        lib_pair.id, (void *)&lib_pair.id, *hidden, (void *)hidden, errno, (void *)&errno);
	if (dl)
		fprintf(report, " dl_tls %ld %p ie_tls %d %p", *dl, (void *)dl, *ie, (void *)ie);
	fprintf(report, "\n");
	fflush(report);
	pthread_mutex_unlock(&report_mu);
}

static void *worker(void *arg)
{
	int k = (int)(long)arg;
	// Worker 1 uses the dlopen'd libraries (its dynamic TLS block gets
	// allocated); workers 2 and 3 never touch them.
	set_and_report(k, k == 1);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&never); // the main thread never arrives
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s tls_dl.so tls_dlie.so report\n", argv[0]);
		return 2;
	}
	report = fopen(argv[3], "w");
	if (!report)
		return 1;
	pthread_barrier_init(&ready, NULL, WORKERS + 1);
	pthread_barrier_init(&never, NULL, WORKERS + 2);
	pthread_t th[WORKERS];
	pthread_create(&th[2], NULL, worker, (void *)3);
	void *h = dlopen(argv[1], RTLD_NOW);
	void *hie = dlopen(argv[2], RTLD_NOW);
	if (!h || !hie) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	dl_addr = (long *(*)(void))dlsym(h, "dl_tls_addr");
	dl_set = (void (*)(int))dlsym(h, "dl_set");
	ie_addr = (int *(*)(void))dlsym(hie, "ie_tls_addr");
	ie_set = (void (*)(int))dlsym(hie, "ie_set");
	for (long k = 1; k <= 2; k++)
		pthread_create(&th[k - 1], NULL, worker, (void *)k);
	set_and_report(4, 1);
	pthread_barrier_wait(&ready);
	stop_here();
	if (argc > 4) // "wait": stay for a debugger to attach
		for (;;)
			pause();
	return main_tls;
}
