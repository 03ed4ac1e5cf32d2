/* ex_vars: variables, types and expressions for the variables/expr/TCF
 * Expressions tests. Tests stop in stop_here (called from compute) and
 * compare what sonde reads with gdb's print at the same stop. */
#include <stdio.h>
#include <string.h>

struct point { int x, y; };
typedef struct point point_t;
struct node { int value; struct node *next; };
union word { int i; float f; unsigned char b[4]; };
enum color { RED, GREEN = 5, BLUE };
struct bits { unsigned a : 3; signed b : 5; unsigned c : 12; int d; };
struct outer { char tag; struct point pts[2]; union word w; double avg; };

int g_int = 42;
double g_double = 3.25;
const char *g_str = "hello";
int g_arr[3][4];
struct point g_pt = { 3, -4 };
static long s_counter = -7;
struct node g_n2 = { 2, 0 }, g_n1 = { 1, &g_n2 };
struct bits g_bits = { 5, -3, 1000, 77 };
enum color g_color = BLUE;
union word g_u;
unsigned char g_uc = 200;
short g_short = -1234;
float g_float = 1.5f;
unsigned long long g_big = 0xfedcba9876543210ULL;
struct outer g_outer = { 'Q', { { 1, 2 }, { 3, 4 } }, { 0x41424344 }, 2.5 };
int (*g_fp)(int);
int *g_null;
long double g_ld = 1.25L;
_Bool g_flag = 1;
__thread int t_counter = 77;
__thread long t_other = -3;
char g_huge[2 << 20]; /* larger than a value is ever loaded */

__attribute__((noinline)) int stop_here(int n)
{
	__asm__ volatile("" ::: "memory");
	return n + 1;
}

__attribute__((noinline)) int compute(int a, long b, struct point p, point_t *pp, const char *s)
{
	int local = a * 2;
	double d = b / 2.0;
	char buf[8] = "abc";
	int vla_n = a + 2;
	int vla[vla_n];
	for (int i = 0; i < vla_n; i++)
		vla[i] = i * i;
	{
		int inner = local + 1;
		local += stop_here(inner + vla[1] + buf[0]);
		local += inner;
	}
	return local + p.x + pp->y + s[0] + (int)d + vla[vla_n - 1];
}

int main(int argc, char **argv)
{
	(void)argv;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			g_arr[i][j] = i * 10 + j;
	g_u.f = 2.0f;
	g_fp = stop_here;
	g_huge[sizeof g_huge - 1] = 7;
	struct point p = { 7, 8 };
	int r = compute(argc + 4, 100, p, &g_pt, "xyz");
	printf("%d %ld\n", r, s_counter);
	return 0;
}
