// A CPU-bound C++ program for comparing sonde perf's names with perf's:
// namespaces, a class template, overloads and an anonymous namespace.
//   perf_cxx [MILLISECONDS]
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace shapes {
template <typename T> struct Grid {
	T cells[64];
	__attribute__((noinline)) T sum(int rounds) const;
	__attribute__((noinline)) T sum(int rounds, T bias) const { return sum(rounds) + bias; }
};

template <typename T> T Grid<T>::sum(int rounds) const {
	T s = 0;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < 64; i++)
			s += cells[i] * (r + 1);
	return s;
}
} // namespace shapes

namespace {
__attribute__((noinline)) double churn(shapes::Grid<double> &g, int n) {
	return g.sum(n, 0.5);
}
} // namespace

int main(int argc, char **argv) {
	double ms = argc > 1 ? atof(argv[1]) : 300;
	shapes::Grid<double> g{};
	for (int i = 0; i < 64; i++)
		g.cells[i] = i * 0.25;
	volatile double sink = 0;
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
	while (std::chrono::steady_clock::now() < end)
		sink = sink + churn(g, 200);
	std::printf("%f\n", (double)sink);
	return 0;
}
