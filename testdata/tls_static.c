// Thread-local storage of a statically linked executable: no dynamic
// linker, no link_map; the block ends at each thread's thread pointer.
// Two threads give s_tls and s_pair different values and print them with
// their addresses to the file argv[1]; sonde compares with gdb and with
// what was printed.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

struct pair {
	char tag;
	long big;
};

__thread int s_tls = 3;
__thread struct pair s_pair = {'p', 1L << 40};
__thread char s_pad[24] __attribute__((aligned(32)));

static pthread_barrier_t ready, never;
static FILE *report;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
volatile int sink;

__attribute__((noinline)) void stop_here(void) { sink++; }

static void set_and_report(int k)
{
	s_tls = 3 + k;
	s_pair.big += k;
	s_pad[5] = (char)k;
	pthread_mutex_lock(&mu);
	fprintf(report, "thread %ld s_tls %d %p s_pair.big %ld %p s_pad[5] %d %p\n", (long)gettid(), s_tls,
	        (void *)&s_tls, s_pair.big, (void *)&s_pair.big, s_pad[5], (void *)&s_pad[5]);
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
	if (argc < 2 || !(report = fopen(argv[1], "w")))
		return 2;
	pthread_barrier_init(&ready, NULL, 2);
	pthread_barrier_init(&never, NULL, 3);
	pthread_t th;
	pthread_create(&th, NULL, worker, (void *)1);
	set_and_report(2);
	pthread_barrier_wait(&ready);
	stop_here();
	return s_tls;
}
