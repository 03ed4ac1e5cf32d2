/* A program whose address space changes while it is sampled, for checking
 * that a recording read on several workers binds every sample to the
 * mappings of its time: it loads libm with dlopen and spins in it, unloads
 * it (munmap), spins in its own code, loads it again (mapped anew, perhaps
 * elsewhere), and then forks a child that execs this program again (a new
 * image in a running process), which does the same.
 *   perf_remap [MILLISECONDS [child]] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double own(double x) {
	return x * 1.0000001 + 0.5;
}

__attribute__((noinline)) static double spin(double (*f)(double), double ms) {
	double end = now() + ms / 1000, x = 1;
	while (now() < end)
		for (int i = 0; i < 1000; i++)
			x = f(x + i);
	return x;
}

int main(int argc, char **argv) {
	double ms = argc > 1 ? atof(argv[1]) : 50;
	volatile double sink = 0;
	for (int round = 0; round < 3; round++) {
		void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
		if (h == NULL) {
			fprintf(stderr, "perf_remap: %s\n", dlerror());
			return 1;
		}
		double (*f)(double) = (double (*)(double))dlsym(h, "cbrt");
		if (f == NULL) {
			fprintf(stderr, "perf_remap: %s\n", dlerror());
			return 1;
		}
		sink += spin(f, ms);
		dlclose(h);
		sink += spin(own, ms);
	}
	if (argc < 3) {
		pid_t child = fork();
		if (child == 0) {
			execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : "50", "child", (char *)NULL);
			_exit(127);
		}
		if (child > 0)
			waitpid(child, NULL, 0);
	}
	printf("%g\n", (double)sink);
	return 0;
}
