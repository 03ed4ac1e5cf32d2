// dap_hints: a frame in libstdc++ (execute_native_thread_routine, under a
// std::thread) while libgcc_s, loaded too, has no frame: dap's console
// hints at missing debug information only for files with frames shown
// (dap/hints_test.go).
#include <cstdio>
#include <thread>

__attribute__((noinline)) int hit(int n) {
	std::printf("hit %d\n", n);
	return n + 1;
}

int main() {
	std::thread t([] { hit(1); });
	t.join();
	return 0;
}
