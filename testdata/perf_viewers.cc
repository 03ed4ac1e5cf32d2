// A CPU-bound C++ program whose function names are hard on the viewers'
// parsers: spaces, parentheses, commas and angle brackets in an anonymous
// namespace's class template, its operator() and a lambda.
//   perf_viewers [MILLISECONDS]
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {
template <typename A, typename B> struct Pair {
	A a;
	B b;
	__attribute__((noinline)) B operator()(int n) const {
		B s = b;
		for (int i = 0; i < n; i++)
			s = s * 31 + a + i;
		return s;
	}
};

__attribute__((noinline)) long spin(const Pair<int, long> &p, int n) {
	auto step = [&](int k) __attribute__((noinline)) { return p(k) + 1; };
	long s = 0;
	for (int i = 0; i < n; i++)
		s += step(200 + i % 3);
	return s;
}
} // namespace

int main(int argc, char **argv) {
	double ms = argc > 1 ? atof(argv[1]) : 300;
	Pair<int, long> p{argc, 7};
	volatile long sink = 0;
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
	while (std::chrono::steady_clock::now() < end)
		sink = sink + spin(p, 50);
	std::printf("%ld\n", (long)sink);
	return 0;
}
