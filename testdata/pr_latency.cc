// pr_latency: targets for latency probes (translate/probes, sonde trace
// --latency).
//
//   pr_latency N   calls work() N times, fib(20) once, and through() N times,
//                  of which every third call ends in an exception thrown by
//                  thrower() through through() to main's handler; prints the
//                  results, the same with and without probes.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

extern "C" __attribute__((noinline)) long work(long n) {
	volatile long s = 0;
	for (long i = 0; i < n; i++)
		s = s + i;
	return s;
}

extern "C" __attribute__((noinline)) long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

extern "C" __attribute__((noinline)) long thrower(long x) {
	if (x % 3 == 0)
		throw std::runtime_error("multiple of three");
	return x + 1;
}

extern "C" __attribute__((noinline)) long through(long x) {
	long r = thrower(x);
	return r * 2 + x;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long w = 0, acc = 0, caught = 0;
	for (long i = 0; i < n; i++)
		w += work(i % 64);
	long f = fib(20);
	for (long i = 0; i < n; i++) {
		try {
			acc += through(i);
		} catch (const std::exception &) {
			caught++;
		}
	}
	std::printf("work=%ld fib=%ld acc=%ld caught=%ld\n", w, f, acc, caught);
	return 0;
}
