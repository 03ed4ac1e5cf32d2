// ex_cxx: C++ data for the variables/expr tests: namespaces, classes with
// single and multiple inheritance and virtual functions, references (lvalue
// and rvalue), templates, enum classes, static members, member pointers.
// Tests stop in stop_here (called from use through Derived::probe) and
// compare with gdb.
#include <cstdio>

namespace geo {
struct Point {
	int x, y;
	int sum() const { return x + y; }
};
struct Base {
	int id;
	static int instances;
	virtual ~Base() {}
	virtual int kind() const { return 1; }
};
int Base::instances = 9;
struct Derived : Base {
	double weight;
	Point where;
	int kind() const override { return 2; }
	int probe(int n) const;
};
template <typename T, int N> struct Buffer {
	T items[N];
	int used;
};
enum class Mode : unsigned char { Off = 0, On = 7 };
int counter = 5;
} // namespace geo

struct Multi : geo::Point, geo::Base {
	long extra;
};

// A diamond through virtual inheritance: VBase's offset is in the vtable.
struct VBase {
	int vb;
};
struct Left : virtual VBase {
	int l;
};
struct Right : virtual VBase {
	int r;
};
struct Diamond : Left, Right {
	int d;
};
Diamond g_diamond;

geo::Derived g_derived;
geo::Buffer<short, 4> g_buf = {{1, 2, 3, 4}, 3};
geo::Mode g_mode = geo::Mode::On;
int geo::Point::*g_memptr = &geo::Point::y;
Multi g_multi;

__attribute__((noinline)) int stop_here(int n)
{
	__asm__ volatile("" ::: "memory");
	return n + 1;
}

// A member function between use and stop_here: its members by their names.
__attribute__((noinline)) int geo::Derived::probe(int n) const
{
	return stop_here(n + id) - id;
}

__attribute__((noinline)) int use(geo::Derived &d, const geo::Point &p, geo::Point &&r, geo::Buffer<short, 4> *b)
{
	int total = d.id + p.x + r.y + b->used;
	return d.probe(total) + d.kind();
}

int main()
{
	g_derived.id = 11;
	g_derived.weight = 2.5;
	g_derived.where = {3, 4};
	g_multi.x = 1;
	g_multi.y = 2;
	g_multi.id = 3;
	g_multi.extra = 4;
	g_diamond.vb = 42;
	g_diamond.l = 1;
	g_diamond.r = 2;
	g_diamond.d = 3;
	geo::Point p{5, 6};
	int r = use(g_derived, p, geo::Point{7, 8}, &g_buf);
	std::printf("%d %d %d\n", r, geo::counter, g_multi.*g_memptr);
	return 0;
}
