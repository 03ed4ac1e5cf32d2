/* Test program for `sonde stack` (cmd/sonde): built without debug
 * information, GCC's constant-propagation clone "work.constprop.0" is on the
 * stack; gdb prints it as "work.constprop". Prints "ready" and blocks. */
#include <stdio.h>
#include <unistd.h>

static __attribute__((noinline)) int work(int x, int y) {
	if (y) {
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	return x;
}

int main(int argc, char **argv) {
	(void)argv;
	return work(argc, 1) + work(argc, 1);
}
