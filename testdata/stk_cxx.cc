// Test program for `sonde stack` (cmd/sonde): C++ templates, a lambda, and an
// exception in flight — a destructor runs from a landing pad while the
// exception propagates, and blocks there. Prints "ready" first.
#include <cstdio>
#include <stdexcept>
#include <unistd.h>
#include <vector>

namespace corpus {

struct Guard {
	int id;
	~Guard() {
		if (id == 1) {
			std::printf("ready\n");
			std::fflush(stdout);
			for (;;)
				pause();
		}
	}
};

template <typename T, int N> struct Pipeline {
	std::vector<T> items;
	template <typename F> __attribute__((noinline)) int stage(F f) {
		Guard g{N};
		int sum = 0;
		for (auto &x : items)
			sum += f(x);
		return sum;
	}
};

__attribute__((noinline)) int thrower(int x) {
	if (x > 2)
		throw std::runtime_error("too big");
	return x;
}

} // namespace corpus

int main() {
	corpus::Pipeline<int, 1> p{{1, 2, 3}};
	try {
		return p.stage([](int x) { return corpus::thrower(x); });
	} catch (const std::exception &) {
		return 1;
	}
}
