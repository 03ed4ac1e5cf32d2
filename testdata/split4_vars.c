// Test program for GNU split DWARF 4 (-gsplit-dwarf -gdwarf-4): locals,
// parameters, globals, structs and values with location lists, read by
// sonde and compared with gdb at a breakpoint in stop_here.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct point {
	int x, y;
};

struct shape {
	const char *name;
	struct point corner[2];
	double area;
	unsigned flags : 3;
	unsigned kind : 5;
};

enum mood { CALM = 1, BUSY = 4, ANGRY = 9 };

int g_count = 41;
long g_long = -1234567890123L;
double g_ratio = 2.75;
enum mood g_mood = BUSY;
struct point g_origin = {-7, 13};
struct shape g_shape = {"square", {{1, 2}, {3, 4}}, 4.0, 5, 17};
const char *g_label = "split4";
int g_table[5] = {2, 3, 5, 7, 11};
static int s_hidden = 99;
__thread int t_split = 606;

volatile int sink;

__attribute__((noinline)) void stop_here(int n)
{
	sink = n;
}

__attribute__((noinline)) long mix(long a, int b, struct point p, const struct shape *sh)
{
	long local = a * b + p.x - p.y;
	int scaled[3] = {b, b * 2, b * 3};
	double frac = sh->area / (b + 1);
	for (int i = 0; i < 3; i++) {
		local += scaled[i] * i;
		sink = scaled[i];
	}
	stop_here((int)local + (int)frac);
	return local + sh->corner[1].x + a;
}

__attribute__((noinline)) int walk(int depth, struct point *pt)
{
	int acc = depth * 10 + pt->x;
	struct point moved = {pt->x + depth, pt->y - depth};
	long r = mix(acc + 1000, depth + 2, moved, &g_shape);
	sink = (int)r;
	return acc + (int)r;
}

int main(int argc, char **argv)
{
	struct point start = {argc + 4, argc * 9};
	s_hidden += argc;
	t_split += argc;
	int total = walk(argc + 2, &start);
	printf("%d %d\n", total, s_hidden);
	return 0;
}
