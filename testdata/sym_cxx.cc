// Test program for symbols/elfsym demangling: namespaces, templates,
// methods, operators, lambdas and clones, compared with `nm -C`.
#include <cstdio>
#include <vector>
#include <string>

namespace symns {
template <typename T, int N>
struct Box {
	T items[N];
	__attribute__((noinline)) T sum() const {
		T s{};
		for (int i = 0; i < N; i++) s += items[i];
		return s;
	}
	Box &operator+=(const T &v) {
		for (int i = 0; i < N; i++) items[i] += v;
		return *this;
	}
};

__attribute__((noinline)) int twice(int x) { return 2 * x; }
__attribute__((noinline)) double twice(double x) { return 2 * x; }

class Widget {
public:
	virtual ~Widget() {}
	__attribute__((noinline)) virtual std::string name(const char *prefix) const {
		return std::string(prefix) + "widget";
	}
};
} // namespace symns

int main(int argc, char **) {
	symns::Box<int, 3> bi{{1, 2, 3}};
	symns::Box<double, 2> bd{{1.5, 2.5}};
	bi += argc;
	bd += 1.0;
	auto lambda = [argc](int y) __attribute__((noinline)) { return argc * y + 1; };
	std::vector<int> v{bi.sum(), symns::twice(argc), lambda(4)};
	symns::Widget w;
	std::printf("%d %f %zu %s\n", v[0], bd.sum() + symns::twice(1.0), v.size(), w.name("x").c_str());
	return 0;
}
