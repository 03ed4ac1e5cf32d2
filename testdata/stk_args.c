/* Test program for the arguments and locals of `sonde stack` (cmd/sonde),
 * compared with gdb's bt and bt full: one frame whose parameters and locals
 * cover the kinds of values gdb formats differently (chars, bools, enums,
 * floats, pointers to strings, symbols and functions, structs and unions
 * passed by value, arrays with repeats, long strings), nested blocks and
 * static locals, under a recursion that passes its argument down (entry
 * values at -O2). It prints "ready" and blocks forever.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define USE(x) __asm__ volatile("" : : "g"(x) : "memory")

enum color { RED, GREEN = 5, BLUE };
enum flags { F_A = 1, F_B = 2, F_C = 8 };
struct point {
	int x, y;
};
union num {
	int i;
	float f;
};
struct node {
	int v;
	struct node *next;
	char name[8];
	unsigned bits : 3;
	enum color col;
};

int global_counter = 7;
struct point global_pt = {1, 2};
char long_text[300];
char quoted[] = "say \"hi\"\n\t\\ \033 done";

NOINLINE int twice(int v) { return 2 * v; }

NOINLINE void block(int depth) {
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
	USE(depth);
}

__attribute__((noipa)) void kinds(char c, unsigned char uc, signed char sc, bool b, short s, unsigned short us, long l,
		    unsigned long ul, long long ll, float f, double d, long double ld, enum color col, enum flags fl,
		    int *ip, const char *str, const char *lng, void *vp, int (*fp)(int), struct point pt,
		    struct point *ppt, union num un, const char *nul, char *bad) {
	int local_int = (int)l + 1;
	char buf[32] = "hi";
	char full[4] = {'a', 'b', 'c', 'd'};
	int zeros[20] = {0};
	int small[3] = {1, 2, 3};
	struct node n = {3, NULL, "nd", 5, BLUE};
	double dd = 0.1;
	float ff = 1.5f;
	static int counter = 42;
	unsigned char bytes[16];
	memset(bytes, 0xff, sizeof bytes);
	bytes[0] = '1';
	{
		int inner_a = 10, inner_b = 20, zz = 30;
		USE(&inner_a);
		USE(&inner_b);
		USE(&zz);
		block(local_int);
	}
	USE(buf);
	USE(full);
	USE(zeros);
	USE(small);
	USE(&n);
	USE(&dd);
	USE(&ff);
	USE(&counter);
	USE(bytes);
	USE(c + uc + sc + b + s + us + l + ul + ll + f + d + ld + col + fl);
	USE(ip);
	USE(str);
	USE(lng);
	USE(vp);
	USE(fp);
	USE(pt.x);
	USE(ppt);
	USE(un.i);
	USE(nul);
	USE(bad);
}

NOINLINE int down(int n, const char *tag) {
	if (n == 0) {
		union num un = {.i = 0x3fc00000};
		kinds('A', 200, -5, true, -300, 65000, -1234567, 3000000000UL, -9000000000LL, 3.14f, 2.718281828,
		      1.25L, GREEN, F_A | F_C, &global_counter, quoted, long_text, &global_pt.y, twice, global_pt,
		      &global_pt, un, NULL, (char *)1);
		return 0;
	}
	int r = down(n - 1, tag) + 1;
	USE(r);
	return r;
}

int main(int argc, char **argv) {
	for (int i = 0; i < (int)sizeof long_text - 1; i++)
		long_text[i] = 'a' + i % 26;
	int r = down(2, argv[0]);
	USE(r); /* no tail call: main stays on the stack */
	return r == 99;
}
