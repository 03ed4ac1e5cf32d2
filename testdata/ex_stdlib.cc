// ex_stdlib: std::string and std::vector locals for expr's library
// subscripts, string comparisons and smart pointers' * and ->
// (expr/stdlib_test.go), stopped in
// stop_here with them in the caller's frame.
#include <memory>
#include <string>
#include <vector>

__attribute__((noinline)) void stop_here(int n) { asm volatile("" ::"r"(n)); }

int main() {
	std::string s = "hello";
	std::string empty;
	std::string longer(40, 'z');
	std::vector<int> v = {10, 20, 30, 40};
	std::vector<std::string> names = {"alpha", "beta", "a string longer than fifteen bytes"};
	const std::string &ref = names[1];
	struct Box {
		int id;
		std::string label;
	};
	std::shared_ptr<Box> sp = std::make_shared<Box>(Box{7, "shared"});
	std::unique_ptr<Box> up(new Box{9, "unique"});
	std::shared_ptr<int> si = std::make_shared<int>(42);
	stop_here((int)(s.size() + empty.size() + longer.size() + v.size() + names.size() + ref.size() + sp->id + up->id + *si));
	return 0;
}
