// C++ booleans and references as gdb prints them: dap's
// TestCxxBoolsAndRefsMatchGDB compares sonde's watches, hovers, locals
// and logpoints at the marked line with gdb's print.
#include <cstdio>
#include <string>
#include <vector>

#include "dap_gdbgaps.h"

struct Sample {
	std::string name;
	int count;
	const int &limit; // a reference member
};

static int total(const Sample &s, int &acc, const std::string &label, std::vector<int> &&vals, const int *p) {
	int a = s.count, b = acc;
	bool flag = a < b;
	int &ra = a;
	const std::vector<int> &rv = vals; /* BP:log */
	for (int v : rv)
		acc += v;
	acc += a + b + (flag ? 1 : 0) + ra + (p ? *p : 0) + (int)label.size(); /* BP:stop */
	return acc;
}

// Counter's base is only declared in this unit: its members are found
// and printed through the definition dap_gdbgaps_base.cc gives.
struct Counter : Walker {
	int seen = 0;
	bool visit(int v) override {
		seen += v;
		return Walker::visit(v) && seen > 0; /* BP:visit */
	}
};

int main() {
	int lim = 7, acc = 3;
	Sample s{"gamma", 5, lim};
	int r = total(s, acc, s.name, {1, 2, 3}, nullptr);
	Counter c;
	r += c.visit(5);
	std::printf("%d\n", r);
	return r > 0 ? 0 : 1;
}
