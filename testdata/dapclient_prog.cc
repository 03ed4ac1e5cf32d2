// dapclient_prog.cc: the C++ program the DAP client scenario (testdata/dapclient)
// debugs; the shape and the "@NAME" markers of dapclient_prog.c, with a class, a
// std::string and a std::vector.
//
//	dapclient_prog_cc         Calc(2).compute(&p) and exit with its result (27, or
//	                    34 when the scenario has set local.x to 10)
//	dapclient_prog_cc wait    print "ready" and loop (to be attached to)
//	dapclient_prog_cc crash   abort() in crash(), for a core
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

struct Point {
	int x;
	int y;
	std::string name;
};

static volatile int counter;

class Calc {
public:
	explicit Calc(int scale) : scale_(scale), history_{1, 2, 3, 4} {}
	int add(int a, int b) const;
	int compute(Point *p, int scale);

private:
	int scale_;
	std::vector<int> history_;
};

int Calc::add(int a, int b) const
{
	int sum = a + b; // @IN_ADD
	return sum;
}

int Calc::compute(Point *p, int scale)
{
	int arr[4] = {1, 2, 3, 4};
	Point local = *p;
	int total = 0; // @BP1
	for (int i = 0; i < 4; i++) {
		int v = arr[i] * scale; // @LOG
		total += v; // @COND
	}
	local.x += total; // @NEXT_FROM
	int r = add(local.x, local.y); // @CALL_ADD
	counter += r + int(history_.size()) - 4; // @AFTER_ADD
	return r;
}

static void crash(Point *p, int depth)
{
	int marker = depth * 7 + p->x;
	counter = marker;
	abort(); // @CRASH
}

static void wait_forever()
{
	volatile long ticks = 0;
	std::printf("ready\n");
	std::fflush(stdout);
	for (;;) {
		ticks++; // @WAIT
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	Point p{3, 4, "origin"};
	if (argc > 1 && std::strcmp(argv[1], "wait") == 0)
		wait_forever();
	if (argc > 1 && std::strcmp(argv[1], "crash") == 0)
		crash(&p, 5); // @CRASH_CALLER
	Calc calc(2);
	int result = calc.compute(&p, 2); // @CALLER
	std::printf("result %d\n", result);
	return result;
}
