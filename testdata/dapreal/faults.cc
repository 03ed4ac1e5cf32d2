// faults.cc: a C++ throw from inside libstdc++ (std::vector::at), caught,
// then a store through a null pointer (SIGSEGV) — the exception and signal
// stops of realprog.js --mode faults.
#include <cstdio>
#include <stdexcept>
#include <vector>

struct Cell {
	int value;
};

static int lookup(const std::vector<int> &v, size_t i) {
	return v.at(i); // throws std::out_of_range for i >= v.size()
}

static void poke(Cell *c, int v) {
	c->value = v; // SIGSEGV when c is null
}

int main(int argc, char **argv) {
	std::vector<int> v{1, 2, 3};
	int got = -1;
	try {
		got = lookup(v, 7);
	} catch (const std::out_of_range &e) {
		std::printf("caught: %s\n", e.what());
	}
	Cell *cell = argc > 5 ? new Cell{0} : nullptr;
	std::printf("got %d\n", got);
	std::fflush(stdout);
	poke(cell, 42); // line 31
	return 0;
}
