// Test program for `sonde stack` (cmd/sonde): built without debug
// information, C++ frames are named from the ELF symbol table; gdb prints
// the demangled name with its parameter list ("ns::S<int>::run(int) ()").
// Prints "ready" and blocks.
#include <cstdio>
#include <unistd.h>

namespace ns {
template <typename T> struct S {
	__attribute__((noinline)) int run(T x, int y) {
		if (y) {
			std::printf("ready\n");
			std::fflush(stdout);
			for (;;)
				pause();
		}
		return x;
	}
};
} // namespace ns

int main(int argc, char **) {
	ns::S<int> s;
	return s.run(argc, argc) + s.run(argc + 1, argc);
}
