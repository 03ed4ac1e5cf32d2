/* dap_prog: the program the DAP server's tests debug (package dap). The
 * tests find lines by the markers in comments. Modes (argv[1]): run (the
 * default) works and exits 3; wait loops calling add until killed; crash
 * dereferences NULL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct point { int x, y; };
struct shape {
	const char *name;
	struct point corner[2];
	int tags[5];
	struct point *origin;
};

int counter;
long watched;
struct point g_origin = { 1, 2 };

__attribute__((noinline)) int add(int a, int b)
{
	int sum = a + b; /* BP:add */
	counter += sum; /* BP:add2 */
	watched = counter;
	return sum;
}

__attribute__((noinline)) int work(struct shape *s, int n)
{
	int total = 0;
	for (int i = 0; i < n; i++)
		total += add(s->tags[i % 5], i); /* BP:call */
	return total; /* BP:return */
}

int main(int argc, char **argv)
{
	struct shape sh = { "box", { { 1, 2 }, { 3, 4 } }, { 10, 20, 30, 40, 50 }, &g_origin };
	const char *mode = argc > 1 ? argv[1] : "run";
	const char *greet = getenv("DAP_GREETING");
	printf("hello %s\n", greet ? greet : "nobody");
	fflush(stdout);
	fprintf(stderr, "to stderr\n");
	if (strcmp(mode, "crash") == 0) {
		volatile int *p = 0;
		*p = sh.tags[0]; /* BP:crash */
	}
	while (strcmp(mode, "wait") == 0) {
		add(1, 2);
		usleep(1000);
	}
	int r = work(&sh, 3); /* BP:work */
	printf("result %d\n", r);
	return 3;
}
