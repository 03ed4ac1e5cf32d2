// C++ booleans and references as gdb prints them: dap's
// TestCxxBoolsAndRefsMatchGDB compares sonde's watches, hovers, locals
// and logpoints at the marked line with gdb's print.
#include <cstdio>
#include <string>
#include <vector>

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

int main() {
	int lim = 7, acc = 3;
	Sample s{"gamma", 5, lim};
	int r = total(s, acc, s.name, {1, 2, 3}, nullptr);
	std::printf("%d\n", r);
	return r > 0 ? 0 : 1;
}
