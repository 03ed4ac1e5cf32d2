// Test program for the unwinder: a destructor runs from a landing pad while
// an exception propagates (with -O2 the landing pad lives in a .cold part),
// and stops there with raise(SIGTRAP).
#include <csignal>
#include <stdexcept>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE void stop_here() {
	raise(SIGTRAP);
	asm volatile("" ::: "memory");
}

struct Guard {
	int v;
	NOINLINE ~Guard() {
		if (v == 1)
			stop_here();
		sink = v;
	}
};

NOINLINE void thrower(int n) {
	Guard g{n};
	if (n == 1)
		throw std::runtime_error("boom");
	sink = n;
}

int main(int argc, char **) {
	try {
		thrower(argc);
	} catch (const std::exception &) {
		sink = 2;
	}
	return 0;
}
