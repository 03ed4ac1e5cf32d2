/* dap_cxx: C++ for the DAP server's tests (package dap): exceptions thrown
 * and caught, a derived class, a class with a template base. Lines are found by the BP: markers. */
#include <cstdio>
#include <stdexcept>
#include <string>

struct Base {
	int id = 7;
	virtual ~Base() {}
};
struct Derived : Base {
	double ratio = 0.5;
	const char *label = "d";
};
namespace geo {
template <typename T> struct Holder {
	T held = 5;
};
}
struct Leaf : geo::Holder<int> {
	int own = 6;
};

__attribute__((noinline)) int thrower(int n)
{
	if (n > 1)
		throw std::runtime_error("too big"); /* BP:throw */
	return n;
}

int main()
{
	Derived d;
	Leaf leaf;
	std::string word = "sonde";
	int caught = 0;
	for (int i = 0; i < 3; i++) {
		try {
			thrower(i);
		} catch (const std::exception &e) {
			caught++;
			std::printf("caught %s\n", e.what());
		}
	}
	return caught + d.id + (int)word.size() + leaf.held + leaf.own; /* BP:cxxret */
}
