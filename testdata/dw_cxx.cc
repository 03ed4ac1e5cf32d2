// Test program for package symbols: C++ namespaces, templates, lambdas,
// methods, exceptions (landing pads in .cold parts at -O2).
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace corpus {
namespace detail {
template <typename T> struct Stack {
	std::vector<T> items;
	void push(const T &v) { items.push_back(v); } // LINE:push
	T pop() {
		if (items.empty())
			throw std::runtime_error("empty"); // LINE:pop_throw
		T v = items.back();
		items.pop_back();
		return v;
	}
};
} // namespace detail

class Counter {
  public:
	explicit Counter(int start) : n_(start) {}
	int bump(int by);
	static int twice(int x) { return 2 * x; } // LINE:twice

  private:
	int n_;
};

int Counter::bump(int by) {
	n_ += twice(by); // LINE:bump
	return n_;
}

template <typename F> __attribute__((noinline)) int apply(F f, int v) {
	return f(v) + 1; // LINE:apply
}
} // namespace corpus

int main(int argc, char **) {
	corpus::detail::Stack<int> si;
	corpus::detail::Stack<std::string> ss;
	corpus::Counter c(argc);
	for (int i = 0; i < 3; i++)
		si.push(c.bump(i));
	ss.push("x");
	int k = 3;
	int r = corpus::apply([k](int v) { return v * k; }, argc); // LINE:lambda
	try {
		while (true)
			r += si.pop();
	} catch (const std::exception &e) {
		std::printf("%s %d %zu\n", e.what(), r, ss.items.size());
	}
	return 0;
}
