// dapclient_prog: the C program the DAP client scenario (testdata/dapclient)
// debugs. The scenario finds its lines by their "@NAME" markers, so the
// program can change as long as the markers stay on lines of the same role.
// dapclient_prog.cc and dapclient_prog.rs have the same shape in C++ and Rust.
//
//	dapclient_prog         compute(&p, 2) and exit with its result (27, or 34 when
//	                 the scenario has set local.x to 10 in compute)
//	dapclient_prog wait    print "ready" and loop (to be attached to)
//	dapclient_prog crash   abort() in crash(), for a core
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct point {
	int x;
	int y;
	const char *name;
};

static volatile int counter;

int add(int a, int b)
{
	int sum = a + b; // @IN_ADD
	return sum;
}

int compute(struct point *p, int scale)
{
	int arr[4] = {1, 2, 3, 4};
	struct point local = *p;
	int total = 0; // @BP1
	for (int i = 0; i < 4; i++) {
		int v = arr[i] * scale; // @LOG
		total += v; // @COND
	}
	local.x += total; // @NEXT_FROM
	int r = add(local.x, local.y); // @CALL_ADD
	counter += r; // @AFTER_ADD
	return r;
}

static void crash(struct point *p, int depth)
{
	int marker = depth * 7 + p->x;
	counter = marker;
	abort(); // @CRASH
}

static void wait_forever(void)
{
	volatile long ticks = 0;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		ticks++; // @WAIT
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	struct point p = {3, 4, "origin"};
	if (argc > 1 && strcmp(argv[1], "wait") == 0)
		wait_forever();
	if (argc > 1 && strcmp(argv[1], "crash") == 0)
		crash(&p, 5); // @CRASH_CALLER
	int result = compute(&p, 2); // @CALLER
	printf("result %d\n", result);
	return result;
}
