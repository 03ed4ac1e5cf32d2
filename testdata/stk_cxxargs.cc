/* Test program for `sonde stack` (cmd/sonde): argument lists gdb prints
 * in C++ frames. A lambda's operator() (GCC nests its code inside main's
 * DIE, under the closure type), unnamed parameters (a signal handler's int,
 * a tag struct), and a libstdc++ function known only by its ELF symbol,
 * whose demangled name has a parameter list of its own
 * ("std::thread::join() () from ..."). Prints "ready" and blocks: main in
 * std::thread::join from the lambda, the worker in the signal handler. */
#include <csignal>
#include <cstdio>
#include <thread>
#include <unistd.h>

struct Tag {};

static void handler(int)
{
	for (;;)
		pause();
}

__attribute__((noinline)) static int with_tag(Tag, int n)
{
	raise(SIGUSR1);
	return n;
}

static void worker()
{
	with_tag(Tag{}, 3);
}

int main()
{
	signal(SIGUSR1, handler);
	int k = 7;
	auto f = [k](int a) {
		std::thread t(worker);
		printf("ready\n");
		fflush(stdout);
		t.join();
		return a + k;
	};
	return f(3);
}
