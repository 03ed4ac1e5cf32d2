/* tr_dlloop: a long-running program that loads and unloads a library now
 * and then, as servers with plugins (and python3 importing modules) do.
 *
 *   tr_dlloop     loops forever: hot() 100,000 times, dlopen("libm.so.6")
 *                 and dlclose, a 1 ms sleep. Every dlopen and dlclose runs
 *                 the dynamic linker's _dl_debug_state hook, where a debugger
 *                 that follows library loads keeps an int3: left behind by a
 *                 debugger killed with SIGKILL, it kills this program. */
#include <dlfcn.h>
#include <unistd.h>

__attribute__((noinline)) long hot(long x) { return x * 3 + 1; }

int main(void) {
	volatile long sum = 0;
	for (;;) {
		for (long i = 0; i < 100000; i++)
			sum += hot(i);
		void *h = dlopen("libm.so.6", RTLD_NOW);
		if (h)
			dlclose(h);
		usleep(1000);
	}
}
