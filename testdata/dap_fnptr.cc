// Function values and function pointers in C++ (members, static members,
// namespaces): dap's TestFunctionValuesMatchGDB compares sonde's watches
// at the marked line with gdb's print.
#include <cstdio>

namespace geo {
double scale(double v, int by) { return v * by; }
enum class Unit { Bytes, Kilo, Mega };
} // namespace geo

enum class Mode { Off, On, Auto };

struct Counter {
	int n = 0;
	int (*cb)(int, int) = nullptr;
	Mode mode = Mode::Auto;
	geo::Unit unit = geo::Unit::Kilo;
	int bump(int by) { return n += by; }
	int peek() const { return n; }
	static Counter make(int n0) {
		Counter c;
		c.n = n0;
		return c;
	}
};

static int add(int a, int b) { return a + b; }

static int apply(int (*f)(int, int), Counter *c, int x) {
	int (Counter::*pm)(int) = &Counter::bump;
	int Counter::*ps = &Counter::n;
	int r = f(x, c->*ps); /* BP:stop */
	return (c->*pm)(r);
}

int main() {
	Counter c = Counter::make(3);
	c.cb = add;
	int r = apply(add, &c, 4);
	std::printf("%d %g %d\n", r, geo::scale(1.5, 2), c.peek());
	return r == 10 ? 0 : 1;
}
