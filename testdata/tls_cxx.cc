// C++ thread_local variables: in a namespace, of class type with a
// constructor (dynamically initialized on first use in each thread), and a
// file-static one. Two threads give them different values and print values
// and addresses to the file argv[1]; sonde compares with gdb and with what
// was printed.
#include <pthread.h>
#include <unistd.h>
#include <cstdio>

namespace store {
struct Counter {
	int hits;
	long total;
	Counter() : hits(5), total(50) {}
	void add(int k) { hits += k; total += 10L * k; }
};
thread_local Counter counter;
thread_local int plain = 9;
} // namespace store

static thread_local double ratio = 0.5;

static pthread_barrier_t ready, never;
static FILE *report;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
volatile int sink;

extern "C" __attribute__((noinline)) void stop_here() { sink++; }

static void set_and_report(int k)
{
	store::counter.add(k);
	store::plain = 9 + k;
	ratio = 0.5 * k;
	pthread_mutex_lock(&mu);
	std::fprintf(report, "thread %ld store::counter.hits %d %p store::counter.total %ld %p store::plain %d %p ratio %g %p\n",
	             (long)gettid(), store::counter.hits, (void *)&store::counter.hits, store::counter.total,
	             (void *)&store::counter.total, store::plain, (void *)&store::plain, ratio, (void *)&ratio);
	std::fflush(report);
	pthread_mutex_unlock(&mu);
}

static void *worker(void *arg)
{
	set_and_report((int)(long)arg);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&never);
	return nullptr;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !(report = std::fopen(argv[1], "w")))
		return 2;
	pthread_barrier_init(&ready, nullptr, 2);
	pthread_barrier_init(&never, nullptr, 3);
	pthread_t th;
	pthread_create(&th, nullptr, worker, (void *)1);
	set_and_report(2);
	pthread_barrier_wait(&ready);
	stop_here();
	return store::plain;
}
