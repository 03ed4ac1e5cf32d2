// Test program for the arguments and locals of `sonde stack` on C++,
// compared with gdb's bt and bt full (without libstdc++'s pretty printers):
// references (printed as @0xADDR: value, aggregates as ...), this,
// std::string by value and by reference, an rvalue reference, a member
// function of a class in a namespace, a template. Prints "ready" and
// blocks forever.
#include <cstdio>
#include <string>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

namespace shop {

struct Item {
	int id;
	double price;
};

class Cart {
public:
	int count = 2;
	NOINLINE void add(const Item &item, int &total, std::string label, const std::string &owner, int &&extra,
			  bool *flag);
};

NOINLINE void wait_here(int code) {
	std::printf("ready\n");
	std::fflush(stdout);
	for (;;)
		pause();
	(void)code;
}

void Cart::add(const Item &item, int &total, std::string label, const std::string &owner, int &&extra, bool *flag) {
	int local = item.id + total + extra + count;
	const Item &ref = item;
	Item copy = item;
	wait_here(local + (int)label.size() + (int)owner.size() + (*flag ? 1 : 0) + ref.id + copy.id);
}

template <typename T> NOINLINE T twice(T v, const char *why) {
	static Cart cart;
	Item item{7, 9.5};
	int total = 40;
	bool flag = true;
	std::string owner = "ann";
	cart.add(item, total, "lbl", owner, 3, &flag);
	(void)why;
	return v + v;
}

} // namespace shop

int main() { return shop::twice<long>(21, "test") == 0; }
