// inventory.cc: a multi-file C++ program with STL containers, classes,
// inheritance, templates, exceptions and lambdas, debugged through sonde dap
// by testdata/dapclient/realprog.js (lines are found by their @ markers).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <unistd.h>

#include "mathlib.h"
#include "shapes.h"

using namespace geo;

static int g_events = 0;

static int apply(const std::vector<int> &v, const std::function<int(int)> &f) { // @APPLY_SIG
	int sum = 0;
	for (int x : v)
		sum += f(x); // @APPLY
	return sum;
}

static int risky(int n) {
	if (n > 2)
		throw std::runtime_error("too big: " + std::to_string(n)); // @THROW
	return n * 2;
}

static int guarded(int n) {
	try {
		return risky(n); // @CALL_RISKY
	} catch (const std::runtime_error &e) {
		g_events++; // @CATCH
		return -1;
	}
}

int main(int argc, char **argv) {
	Inventory inv{};
	strcpy(inv.label, "warehouse");
	for (int r = 0; r < 3; r++)
		for (int c = 0; c < 4; c++)
			inv.grid[r][c] = r * 10 + c;
	inv.add(std::make_unique<Circle>(Point{1, 2}, 2.0));
	inv.add(std::make_unique<Rect>(Point{0, 0}, Point{3, 4}));
	inv.add(std::make_unique<Circle>(Point{5, 5}, 1.0));

	Stack<int> ints;
	Stack<std::string> names;
	for (int i = 0; i < 5; i++)
		ints.push(i * i);
	names.push("alpha");
	names.push("beta");

	std::vector<int> big(300);
	for (size_t i = 0; i < big.size(); i++)
		big[i] = (int)i * 3;
	int factor = 7;
	auto scaled = [factor](int x) { return x * factor; }; // @LAMBDA_DEF
	int s = apply({1, 2, 3}, scaled);
	int circles = inv.count("circle"); // @AFTER_APPLY
	double sq = ml_square(factor); // @CALL_SQUARE
	int sum = 0;
	for (int i = 0; i < 5; i++)
		sum += guarded(i); // @LOOP_GUARDED
	try {
		Stack<int> empty;
		empty.pop();
	} catch (const std::out_of_range &e) {
		g_events += 10;
	}
	unsigned char bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	int ck = ml_checksum(bytes, 8);
	printf("s=%d circles=%d sq=%g sum=%d events=%d ck=%d area=%.2f\n", s, circles, sq, sum, g_events, ck, inv.total_area); // @PRINT
	if (argc > 1 && strcmp(argv[1], "crash") == 0) {
		Shape *bad = nullptr;
		if (getenv("DAPREAL_NULL"))
			bad = (Shape *)8;
		printf("%f\n", bad->area()); // @CPP_CRASH
	}
	return ints.size() == 5 ? 0 : 3;
}
